"""``python -m dpcloak`` runs the command line."""

from dpcloak.cli import main

main()
