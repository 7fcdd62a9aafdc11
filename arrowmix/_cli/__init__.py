"""The ``arrowmix`` command line: ``main(argv)`` in ``main``, one module per subcommand."""
