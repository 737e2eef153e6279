"""``python -m t2t_jax.average``: see t2t_jax/cli/average.py."""

from t2t_jax.cli.average import main

if __name__ == "__main__":
    main()
