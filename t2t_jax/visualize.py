"""``python -m t2t_jax.visualize``: see t2t_jax/cli/visualize.py."""

from t2t_jax.cli.visualize import main

if __name__ == "__main__":
    main()
