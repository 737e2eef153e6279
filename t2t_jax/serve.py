"""``python -m t2t_jax.serve``: see t2t_jax/cli/serve.py."""

from t2t_jax.cli.serve import main

if __name__ == "__main__":
    main()
