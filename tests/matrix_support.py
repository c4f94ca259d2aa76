"""A saved matrix made up in memory, for the tests of its judging and its charts."""





def fake_matrix(values: dict[tuple[str, str], list[float]], workloads: list[str], labels: list[str],
                cpu: bool = True) -> dict:
    runs = []
    for (w, v), xs in values.items():
        for x in xs:
            more = {"cpu_usr": 10.0, "cpu_sys": 20.0, "cpu_iowait": 5.0, "cpu_irq": 1.0, "cpu_soft": 2.0,
                    "cpu_us_per_io": x / 1000.0} if cpu else {}
            runs.append({"slot": len(runs), "workload": w, "variant": v, "valid": True,
                         "metrics": {"iops": x, **more}})
    return {"kind": "matrix", "variants": [{"label": v} for v in labels],
            "workloads": [{"name": w, "options": {"rw": "randread", "bs": w}} for w in workloads], "runs": runs,
            "primary_metric": "iops"}
