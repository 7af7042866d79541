"""The README's API example runs as written."""

import re
import warnings
from pathlib import Path


def test_readme_example_runs():
    text = (Path(__file__).parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no python example"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for code in blocks:
            exec(compile(code, "README.md", "exec"), {})
