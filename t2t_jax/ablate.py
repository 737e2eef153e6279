"""``python -m t2t_jax.ablate``: see t2t_jax/cli/ablate.py."""

from t2t_jax.cli.ablate import main

if __name__ == "__main__":
    main()
