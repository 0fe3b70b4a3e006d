"""What every refused command line must look like (imported by the tests that need it)."""

from __future__ import annotations

from core.cli import main


def one_line_error(capsys, *argv: str) -> str:
    """Run the command line; assert exit code 2, nothing on stdout, one line on stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    return err
