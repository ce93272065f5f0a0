"""The `rung` command: registers subcommands and dispatches. Thin by design.

Bad input exits 2 with one line on stderr; anything unexpected exits 1.
TensorFlow is imported only inside the subcommands that run models.
"""

from __future__ import annotations

import argparse
import os
import sys

from rung.errors import InputError, RunError

class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        print(f"rung: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    from rung import __version__
    from rung.cli import advise, bench, catalog, init, launch, profile, report, simulate, tfconfig

    parser = _Parser(prog="rung", description="Decide how to distribute TensorFlow training, from measurements.")
    parser.add_argument("--version", action="version", version=f"rung {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    advise.register(sub)
    profile.register(sub)
    bench.register(sub)
    catalog.register(sub)
    tfconfig.register(sub)
    init.register(sub)
    launch.register(sub)
    simulate.register(sub)
    report.register(sub)
    parser.commands = sub.choices  # each subcommand's parser: its own errors name its own --help
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the subcommand's parser, whose --help lists what it takes
        parser.commands.get(getattr(args, "command", None), parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except InputError as e:
        print(f"rung: error: {e.line()}", file=sys.stderr)
        return 2
    except RunError as e:
        print(f"rung: run failed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("rung: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - the last line of defence
        if os.environ.get("RUNG_DEBUG"):
            raise
        print(f"rung: internal error: {type(e).__name__}: {e} (set RUNG_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 1


def entry() -> None:
    sys.exit(main())
