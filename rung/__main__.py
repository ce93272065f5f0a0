from rung.cli import entry

entry()
