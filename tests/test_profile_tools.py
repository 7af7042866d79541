"""The profiling tools' parsers (their GPU side runs under Nsight Compute on the device; what reads its output is
plain Python and is checked here on a CSV of the form ncu writes)."""

import csv
import io

from benchmarks.fetch_table import launches

HEAD = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
        "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]


def _row(launch, kernel, metric, unit, value):
    return [str(launch), "1", "python3", "127.0.0.1", kernel, "1", "7", "(32, 1, 1)", "(2560, 1, 1)", "0", "9.0",
            "Command line profiler metrics", metric, unit, value]


def test_fetch_table_reads_launches_in_order(tmp_path):
    """Each launch's metrics gathered under its ID, in launch order, the thousands separators read, a launch of the same
    kernel kept apart, and the profiler's own lines before the header skipped."""
    stall = "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio"
    rows = [_row(0, "_scan_fwd_kernel", "gpu__time_duration.sum", "nsecond", "736,512"),
            _row(0, "_scan_fwd_kernel", stall, "inst", "0.01"),
            _row(1, "_scan_bwd_kernel", "gpu__time_duration.sum", "nsecond", "4,320,000"),
            _row(1, "_scan_bwd_kernel", stall, "inst", "0.44"),
            _row(2, "_scan_fwd_kernel", "gpu__time_duration.sum", "nsecond", "1,000"),
            _row(2, "_scan_fwd_kernel", "launch__registers_per_thread", "register/thread", "n/a")]
    out = io.StringIO()
    out.write("==PROF== Connected to process 1\n")
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows([HEAD] + rows)
    path = tmp_path / "calls.csv"
    path.write_text(out.getvalue())
    got = launches(str(path))
    assert [name for name, _ in got] == ["_scan_fwd_kernel", "_scan_bwd_kernel", "_scan_fwd_kernel"]
    assert got[0][1] == {"gpu__time_duration.sum": 736512.0, stall: 0.01}
    assert got[1][1][stall] == 0.44 and got[1][1]["gpu__time_duration.sum"] == 4320000.0
    assert got[2][1] == {"gpu__time_duration.sum": 1000.0}  # (a value that is not a number left out)
