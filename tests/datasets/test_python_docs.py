"""builtin:python-docs: docstrings read from source with `ast` (never imported), split into query and document."""

from __future__ import annotations

from bench.datasets import check_dataset_path
from bench.datasets.python_docs import collect_entries

BODY = "word " * 25


def test_public_docstrings_are_collected_with_qualified_names_and_the_rest_left_out(tmp_path):
    package = tmp_path / "pkg"
    (package / "tests").mkdir(parents=True)
    (package / "__init__.py").write_text(
        f'raise SystemExit("imported")\n\ndef find(x):\n    """Find the thing in x.\n\n    {BODY}\n    """\n\n'
        f'class Box:\n    """A box of many things.\n\n    {BODY} box\n    """\n\n'
        f'    def open(self):\n        """Open the box now please.\n\n        {BODY} open\n        """\n\n'
        f'def _hidden():\n    """Private helpers stay out.\n\n    {BODY}\n    """\n\n'
        f'def short():\n    """No body here at all."""\n\n'
        f'def find(y):\n    """Find it again, redefined.\n\n    {BODY} again\n    """\n'
    )
    (package / "tests" / "test_x.py").write_text(f'def test():\n    """A test is left out.\n\n    {BODY}\n    """\n')
    (package / "py2.py").write_text('print "a Python 2 file"\n')
    entries = collect_entries([tmp_path])
    assert [e.name for e in entries] == ["pkg.find", "pkg.Box", "pkg.Box.open"]  # a name defined twice: the first
    assert entries[0].summary == "Find the thing in x." and entries[0].body.split() == BODY.split()


def test_the_builtin_name_is_known():
    check_dataset_path("builtin:python-docs")  # known by name, not built: a suite's check reads nothing
