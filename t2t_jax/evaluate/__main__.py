from t2t_jax.cli.evaluate import main

main()
