"""``python -m dpcloak`` runs the command line."""

from dpcloak.cli import main

if __name__ == "__main__":  # not when a multiprocessing child re-imports the main module
    main()
