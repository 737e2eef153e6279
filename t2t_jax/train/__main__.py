from t2t_jax.cli.train import main

main()
