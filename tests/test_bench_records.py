"""Every benchmark's JSON names the machine it ran on (CPU model, cores, bf16 flags or the accelerator, versions),
the command and the date: a figure without them cannot be compared with another."""

import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench"
NOT_BENCHMARKS = {
    "__init__.py",
    "machine.py",
    "memory.py",
    "doc_tables.py",
    "torch_reference.py",
    "flax_reference.py",
    "device_check.py",
}


def test_every_benchmark_prints_its_json_through_recorded():
    missing = [
        path.name
        for path in sorted(BENCH.glob("*.py"))
        if path.name not in NOT_BENCHMARKS and "recorded(" not in path.read_text()
    ]
    assert not missing, f"benchmarks whose JSON lacks the machine (wrap it in bench.machine.recorded): {missing}"


def test_recorded_puts_machine_command_and_date_first_and_keeps_a_report_s_own_machine_fields():
    sys.path.insert(0, str(BENCH.parent))
    from bench.machine import recorded

    report = recorded({"machine": {"launcher": "mesh"}, "seconds": 1.5})
    assert list(report)[:3] == ["machine", "command", "date"] and report["seconds"] == 1.5
    machine = report["machine"]
    assert machine["launcher"] == "mesh" and machine["cpu"]["cores"] >= 1 and "flags" in machine["cpu"]
    assert machine["jax"] and machine["backend"] == "cpu"
