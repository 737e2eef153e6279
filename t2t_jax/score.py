"""``python -m t2t_jax.score``: see t2t_jax/cli/score.py."""

from t2t_jax.cli.score import main

if __name__ == "__main__":
    main()
