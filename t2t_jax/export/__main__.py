from t2t_jax.cli.export import main

main()
