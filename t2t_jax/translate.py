"""``python -m t2t_jax.translate``: see t2t_jax/cli/translate.py."""

from t2t_jax.cli.translate import main

if __name__ == "__main__":
    main()
