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
    assert set(machine["host_memory"]) == {"transparent_huge_pages", "glibc_tunables"}


def test_host_memory_records_the_tunables_the_process_started_with():
    sys.path.insert(0, str(BENCH.parent))
    from bench.machine import host_memory

    assert host_memory({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})["glibc_tunables"] == "glibc.malloc.hugetlb=1"
    assert host_memory({})["glibc_tunables"] == ""


def test_cpu_description_names_the_generation_and_caches_that_one_model_name_hides(tmp_path):
    """Two "AMD EPYC" machines can differ 2.5x in speed: the family/model/stepping of the first core and core 0's
    cache sizes are recorded as /proc/cpuinfo and sysfs give them, and absent files leave them out."""
    from bench.machine import cpu_description

    cpuinfo = tmp_path / "cpuinfo"
    core = "model name\t: AMD EPYC\ncpu family\t: {}\nmodel\t\t: 1\nstepping\t: 1\nflags\t\t: fpu avx2 sse\n\n"
    cpuinfo.write_text(core.format(25) + core.format(99), encoding="utf-8")  # the first core's ids count
    for index, (level, kind, size) in enumerate([(1, "Data", "32K"), (2, "Unified", "512K"), (3, "Unified", "32768K")]):
        folder = tmp_path / "cache" / f"index{index}"
        folder.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(f"{value}\n", encoding="utf-8")
    cpu = cpu_description(str(cpuinfo), str(tmp_path / "cache"))
    assert cpu["model"] == "AMD EPYC" and cpu["flags"] == ["avx2"]
    assert (cpu["family"], cpu["model_number"], cpu["stepping"]) == (25, 1, 1)
    assert cpu["caches"] == {"L1d": "32K", "L2": "512K", "L3": "32768K"}
    bare = cpu_description(str(tmp_path / "missing"), str(tmp_path / "missing"))
    assert "family" not in bare and "caches" not in bare and bare["cores"] >= 1
