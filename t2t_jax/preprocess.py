"""``python -m t2t_jax.preprocess``: see t2t_jax/cli/preprocess.py."""

from t2t_jax.cli.preprocess import main

if __name__ == "__main__":
    main()
