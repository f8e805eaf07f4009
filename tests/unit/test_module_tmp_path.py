"""The module-scoped scratch directory (tests/conftest.py): gone after a passing module, kept
after a failing one, as pytest's ``tmp_path_retention_policy = "failed"`` does for ``tmp_path``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

MODULE = """
import pytest

@pytest.fixture(scope="module")
def clone(module_tmp_path):
    (module_tmp_path / "big.bin").write_bytes(b"x" * 1024)
    return module_tmp_path

def test_writes(clone):
    assert (clone / "big.bin").is_file()
    (clone.parent / "where.txt").write_text(str(clone))

def test_second(clone):
    assert {OUTCOME}
"""


@pytest.mark.parametrize("passes", [True, False], ids=["passing", "failing"])
def test_module_scratch_is_removed_only_when_every_test_passed(
    pytester: pytest.Pytester, passes: bool
) -> None:
    shutil.copy(CONFTEST, pytester.path / "conftest.py")
    pytester.makepyfile(test_clone=MODULE.replace("{OUTCOME}", str(passes)))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 if passes else 1, failed=0 if passes else 1)
    scratch = Path(next(pytester.path.parent.rglob("where.txt")).read_text())
    assert scratch.name.startswith("test_clone")
    assert scratch.exists() is not passes
