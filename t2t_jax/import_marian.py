"""``python -m t2t_jax.import_marian``: see t2t_jax/cli/import_marian.py."""

from t2t_jax.cli.import_marian import main

if __name__ == "__main__":
    main()
