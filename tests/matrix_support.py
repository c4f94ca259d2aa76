"""A saved matrix made up in memory, for the tests of its judging and its charts."""

from doc_support import matrix_doc

from iosched.core.base.encode import encode
from iosched.core.documents.document import MatrixDoc
from iosched.core.experiment.matrix import MatrixPlan
from iosched.core.experiment.runner import HostInfo
from iosched.core.kernel.device_doc import DeviceNameDoc
from iosched.core.present.worded import worded_matrix_judgement
from iosched.core.statistics.matrix_judge import judge_matrix


def fake_matrix(values: dict[tuple[str, str], list[float]], workloads: list[str], labels: list[str],
                cpu: bool = True) -> MatrixDoc:
    runs = []
    for (w, v), xs in values.items():
        for x in xs:
            more = {"cpu_usr": 10.0, "cpu_sys": 20.0, "cpu_iowait": 5.0, "cpu_irq": 1.0, "cpu_soft": 2.0,
                    "cpu_us_per_io": x / 1000.0} if cpu else {}
            runs.append({"slot": len(runs), "workload": w, "variant": v, "valid": True,
                         "metrics": {"iops": x, **more}})
    return matrix_doc({"kind": "matrix", "variants": [{"label": v} for v in labels],
                       "workloads": [{"name": w, "options": {"rw": "randread", "bs": w}} for w in workloads],
                       "runs": runs, "primary_metric": "iops"})


def judged(doc: MatrixDoc, *args, **kwargs) -> dict:
    """The matrix's judgement as its JSON (what `--json` prints)."""
    return encode(worded_matrix_judgement(doc, judge_matrix(doc, *args, **kwargs)))  # its words, as --json has them


def plan_document(plan: MatrixPlan, device: str = "loop9") -> MatrixDoc:
    """A new matrix's document for ``plan`` on a device known by name alone, no run yet."""
    return plan.document(HostInfo("6.x", "x86_64", "test", DeviceNameDoc(name=device)), None, 0.0)
