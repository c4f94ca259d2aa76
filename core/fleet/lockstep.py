"""A fleet compare in lockstep: the variants switched on every host together, run by run, and the load driven by
fio's own client through a `fio --server` on each host.

Each host runs `iosched fleet-host` over SSH (core/fleet/fleet_host.py): its iosched checks the device and the
job, takes the device's load lock, puts each variant in place through its own journal, reads its own sampler
around each run, and puts everything back when its session ends for any reason, so a controller that dies leaves
no host changed. Its fio server listens on a unix socket only root may reach there; this controller reaches it
through the SSH session's forward to a socket in a private folder here. No port is opened on any network. fio's
client here does what its server asks (it sends back any file the server names), so it runs fenced in
(core/load/fio_sandbox.py): it sees the system's programs and that folder alone.

Per run, in the balanced order: every host puts the variant in place, the settle passes, every host opens its
window, one fio client per host starts at once (each its own process, so a host that hangs or fails costs no
other host its run), and every host closes its window. A host whose run failed or whose settings drifted has that
run marked invalid; a host whose session is lost or refuses is marked failed, and the others go on.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, TypeVar

from iosched.core.base.encode import encode
from iosched.core.base.errors import IoschedError
from iosched.core.base.outfile import write_file
from iosched.core.documents.document import CompareDoc, RunDoc, SequentialDoc
from iosched.core.documents.params import Variant
from iosched.core.documents.saved import read_experiment
from iosched.core.experiment.runner import Workload, hold_to_range
from iosched.core.experiment.slots import Course, Slot, Stop
from iosched.core.experiment.variants import plan_order
from iosched.core.fleet.fleet import Host, HostRun, check_host_run, read_scheduler
from iosched.core.fleet.fleet_host import socket_path
from iosched.core.fleet.host_answers import Applied, Bye, Done, Ready, Window, read_answer
from iosched.core.fleet.host_output import MAX_ANSWER, MAX_ANSWERS, parse_json, read_said, size_words
from iosched.core.load.children import Child
from iosched.core.load.fio import FioProgress, FioRun, dies_with_us, expected_of, fio_binary, timeout_of
from iosched.core.load.fio_result import FioFailed
from iosched.core.load.fio_sandbox import INSIDE, check_fence, fenced
from iosched.core.load.jobs import Job, parse_job_file
from iosched.core.load.targets import Target
from iosched.core.statistics.verdict import RunningVerdict, sequential_plan

ANSWER_S = 60.0  # a host that takes longer to put a variant in place or read its sampler is lost


class LinkLost(IoschedError):
    """A host's session ended, or its iosched refused or said something that is not an answer."""


_A = TypeVar("_A")
UNASKED = 16  # answers waiting unread: the protocol leaves one at most; a host that writes on and on is cut off


@dataclass
class Link:
    """One host's `iosched fleet-host` over SSH, with its fio server's socket forwarded to ``local``."""

    run: HostRun
    local: Path
    proc: subprocess.Popen[str]
    child: Child  # the one that signals and reaps it
    answers: queue.Queue[str | None] = field(default_factory=queue.Queue)
    ready: Ready | None = None
    job_path: Path | None = None
    offset: float = 0.0  # added to this session's times: a resumed host's runs go on after its saved ones
    switches: list[tuple[float, str]] = field(default_factory=list)
    fio: FioRun | None = None
    stopping: bool = False
    stderr_reader: threading.Thread | None = None
    cut: str | None = None  # the bound the host broke: its session was ended here for it
    _failing: threading.Lock = field(default_factory=threading.Lock)

    @property
    def live(self) -> bool:
        return self.run.live

    def change(self, note: str | None = None, run: RunDoc | None = None, **fields: Any) -> None:
        """The host's compare changed (``HostRun.change``)."""
        self.run.change(note, run, **fields)

    def cut_off(self, why: str) -> None:
        """The host broke a bound (``why`` says which): its session is ended at once, from whichever thread read it
        (its iosched sees its input end and puts its device back); its next answer is ``why``."""
        if self.cut is None:
            self.cut = why
        self.child.signal_group(signal.SIGTERM)

    def ask(self, line: str | None, tp: type[_A], timeout: float = ANSWER_S) -> _A:
        """Send ``line`` (None: only read the next answer) and return the answer as a ``tp``, every number in it
        checked by the strict decoder; LinkLost when the session ended, the host refused, broke a bound, said
        something that does not decode, or no answer came in time."""
        got = read_answer(tp, self.exchange(line, timeout))
        if isinstance(got, str):
            verb = repr(line.split()[0]) if line and line.split() else "its first line"
            raise LinkLost(f"its iosched's answer to {verb} was not understood: {got}")
        return got

    def exchange(self, line: str | None, timeout: float = ANSWER_S) -> dict[str, object]:
        """Send ``line`` (None: only read the next answer) and return the answer as parsed JSON, its ``ok`` true
        (read as its declared type by ``ask``)."""
        if line is not None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(line + "\n")
                self.proc.stdin.flush()
            except (OSError, ValueError):
                raise LinkLost(self._lost()) from None
        try:
            text = self.answers.get(timeout=timeout)
        except queue.Empty:
            raise LinkLost(f"no answer from its iosched within {timeout:.0f} s") from None
        if text is None:
            raise LinkLost(self.cut or self._lost())
        answer = parse_json(text)
        if not isinstance(answer, dict):
            raise LinkLost("its iosched said something that is not an answer")
        if answer.get("ok") is not True:
            raise LinkLost(f"its iosched refused: {str(answer.get('error'))[:300]}")
        return answer

    def _lost(self) -> str:
        """Why the session ended, from ssh's status and the last words on its stderr (read to their end)."""
        if self.cut is not None:
            return self.cut
        self.child.wait(timeout=5)
        if self.stderr_reader is not None:
            self.stderr_reader.join(timeout=2)
        rc = self.proc.poll()
        tail = self.run.stderr_tail
        why = next((s[9:] for s in reversed(tail) if s.startswith("iosched: ")), "")
        if rc in (None, 255):
            return "the SSH session was lost" + (f": {(why or tail[-1])[:300]}" if why or tail else "")
        if rc == 127:  # a command not found: ssh here, or iosched there (--remote-iosched)
            return "a command was not found" + (f": {(why or tail[-1])[:300]}" if why or tail else "")
        return f"its iosched exited with status {rc}" + (f": {(why or tail[-1])[:300]}" if why or tail else "")

    def fail(self, why: str) -> None:
        with self._failing:  # the first reason stays (a reader thread's cut, or the answer that showed it)
            if self.live:
                self.run.status, self.run.reason = "failed", self.cut or why
        self.close()

    def close(self) -> None:
        """End the session: the host's iosched sees its input end and puts its device back."""
        self.stopping = True  # before fio is read: a client being started now sees it and stops itself
        fio = self.fio  # once: the thread that runs it clears the field when it ends
        if fio is not None:
            fio.stop()
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()


def _read_answers(stream: IO[str] | None, link: Link) -> None:
    """The host's answers, one a line, each within MAX_ANSWER and all within MAX_ANSWERS; a longer one, more, or
    more unread answers than the protocol ever leaves cuts the host off (a host that only writes is no host of
    ours). A last line without its end is a cut answer: the session was lost in the middle of it."""
    total = 0
    if stream is not None:
        while line := stream.readline(MAX_ANSWER + 1):
            total += len(line)
            if len(line) > MAX_ANSWER:
                link.cut_off(f"its iosched wrote an answer longer than {size_words(MAX_ANSWER)} (the bound on an "
                             "answer)")
                break
            if total > MAX_ANSWERS:
                link.cut_off(f"its iosched wrote more than {size_words(MAX_ANSWERS)} of answers (the bound on a "
                             "session's answers)")
                break
            if link.answers.qsize() >= UNASKED:
                link.cut_off("its iosched wrote answers to nothing it was asked")
                break
            if not line.endswith("\n"):
                break
            link.answers.put(line)
    link.answers.put(None)


def _read_stderr(link: Link, on_line: Callable[[str, str], None]) -> None:
    """The host's words, each said here as it comes, within MAX_SAID_LINE a line and MAX_SAID in all."""
    run = link.run

    def heard(line: str) -> None:
        run.stderr_tail = [*run.stderr_tail, line[:4096]][-3:]
        on_line(run.host.name, line)

    why = read_said(link.proc.stderr, heard)
    if why is not None:
        link.cut_off(why)


def _each(links: Sequence[Link], work: Callable[[Link], None]) -> None:
    """``work`` on every live link at once; a link whose work raises IoschedError is marked failed."""

    def one(link: Link) -> None:
        try:
            work(link)
        except IoschedError as e:
            link.fail(str(e))
        except Exception as e:  # a fault met reading its answers: its host fails with it, never a thread's traceback
            link.fail(f"its iosched's answer was not understood ({type(e).__name__}: {str(e)[:200]})")

    threads = [threading.Thread(target=one, args=(lk,), daemon=True) for lk in links if lk.live]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def job_file_text(job: Job, runtime: float | None, path: str) -> str:
    """The job file each host's fio server runs, from the catalog's checked options, aimed at ``path``."""
    if job.roles:
        text = job.as_job_file().render(runtime, path)
    else:
        lines = [f"[{job.name}]", *(f"{k}={v}" for k, v in job.fio_options())]
        text = parse_job_file("\n".join(lines) + "\n", job.name).render(runtime, path)
    # Jobs as threads of the server's backend, in the server's process group: a job process would start a
    # session of its own, and outlive its server when the host's iosched stops it.
    assert text.startswith("[global]\n")
    return "[global]\nthread=1\n" + text[len("[global]\n"):]


@dataclass
class Lockstep:
    """What a lockstep compare asks: the variants (as the user wrote them), the catalog job, its runtime, the
    repeats and the settle, the hosts' iosched command and the ssh client."""

    variants: list[Variant]
    spec: str  # the --schedulers text each host's iosched parses again
    job: Job
    runtime: float | None
    repeat: int
    settle: float
    iosched: str = "iosched"
    ssh: str = "ssh"
    first: int = 0  # the slot to start from: a resumed fleet's saved slots are done
    saved: dict[str, CompareDoc] = field(default_factory=dict)  # host -> its saved compare, to go on with
    until_verdict: bool = False  # repeat is then the most runs per variant; each host gets the boundary
    alpha: float = 0.05
    metric: str = "iops"  # the primary metric the boundary watches


class LockstepRuns:
    """What a lockstep fleet's executor keeps of its hosts, whoever runs their slots (their iosched over SSH,
    ``InLockstep``, or a simulation, core/fleet/simulated_hosts.py): ``runs``, every host's run of the fleet as it
    stands, each with its compare; the boundary each host's compare carries; and what the end of the slots does to
    each compare. A host that fails is marked failed with why, and the others go on."""

    settle = 0.0

    def __init__(self, hosts: Sequence[Host], plan: Lockstep, on_line: Callable[[str, str], None]) -> None:
        self.plan, self.on_line = plan, on_line
        self.settle = plan.settle
        # A resumed host's saved runs are its document from the start: whatever fails now, they stay.
        self.runs = [HostRun(h, doc=plan.saved.get(h.name)) for h in hosts]
        self.order = plan_order(len(plan.variants), plan.repeat)
        self.boundary: Boundaries | None = None
        self.offsets: dict[int, float] = {}  # a resumed host's: its runs go on after its saved ones

    def documents(self, ready: dict[int, Ready | None]) -> None:
        """Each live host's compare (``ready``: each host reached, by its run's id, with its first answer), and the
        boundary it carries."""
        plan = self.plan
        # The boundary (a second or so of simulation, made once): each host's compare is judged at its looks.
        seq = sequential_plan(plan.repeat, plan.alpha, len(plan.variants), False) if plan.until_verdict else None
        for r in self.runs:
            first = ready.get(id(r))
            if r.live and first is not None:
                others = [o.host.name for o in self.runs if o is not r and id(o) in ready]
                r.doc, self.offsets[id(r)] = _document(r, first, plan, self.order, others, seq)
        self.boundary = Boundaries(plan, self.runs)

    def crossed(self, n: int) -> bool:
        """Every live host's boundary crossed by slot ``n`` (said on each host's compare)."""
        if self.boundary is None or not self.boundary.crossed(self.runs, n, self.on_line):
            return False
        for r in self.runs:
            if r.live:
                r.change(note=f"stopped after run {n + 1} of at most {len(self.order)}: every host's boundary was "
                              "crossed")
        return True

    def finish(self) -> None:
        """Every slot run: each host puts its device back and says which switches it made; its compare final."""
        switches = self.goodbye()
        _close_failed(self.runs)
        for r in self.runs:
            if r.live and r.doc is not None:
                r.status = "done"
                made = [*(r.doc.switches or []), *((t + self.offsets.get(id(r), 0.0), x) for t, x in
                                                   switches.get(id(r), []))]
                r.change(status="final", switches=made, finished=time.time())

    def goodbye(self) -> dict[int, list[tuple[float, str]]]:
        """Each live host's switches, on its session's clock, as it ends its slots."""
        return {}

    def stopped(self, why: str) -> None:
        """Ended early: each live host's compare says so, with what its runs cover."""
        for r in self.runs:
            if r.live:
                r.status, r.reason = "cancelled", "stopped"
                if r.doc is not None and r.doc.status == "running":
                    r.change(note=f"ended early ({why}): results cover the runs that finished", status="cancelled",
                             finished=time.time())

    def after(self) -> None:
        """Once every session has ended: what the controller reads of each host."""
        return None

    # The executor's own (core/experiment/slots.py ``Executor``): how each host is reached and its slots run.
    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        raise NotImplementedError

    def apply(self, slot: Slot) -> object | None:
        raise NotImplementedError

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> list[HostRun]:
        raise NotImplementedError

    def end(self) -> IoschedError | None:
        raise NotImplementedError


class InLockstep(LockstepRuns):
    """The executor of a lockstep fleet: each slot on every host together. ``begin`` reaches each host (its session,
    its first answer, its compare's document, a resumed host's saved one going on); ``apply`` puts the slot's
    variant in place on every host, ``run`` opens every host's window, runs one fio client per host at once and
    closes the windows, each host's run joining its compare; ``end`` closes every session (each host's iosched puts
    its device back and exits) and waits for them."""

    def __init__(self, hosts: Sequence[Host], plan: Lockstep, on_line: Callable[[str, str], None]) -> None:
        super().__init__(hosts, plan, on_line)
        self.folder = Path(tempfile.mkdtemp(prefix="iosched-fleet-"))  # private: the forwarded sockets live here
        self.links: list[Link] = []

    def begin(self, say: Callable[[str], None], note: Callable[[str], None]) -> None:
        plan, links = self.plan, self.links
        check_fence(fio_binary(), self.folder)  # before any host is reached: a client that cannot be fenced never runs
        for n, run in enumerate(self.runs):
            try:
                links.append(_open(run, n, self.folder, plan, self.on_line))
            except IoschedError as e:
                run.status, run.reason = "failed", str(e)
        _each(links, lambda lk: _ready(lk, self.folder, plan))
        self.documents({id(lk.run): lk.ready for lk in links})
        for lk in links:
            lk.offset = self.offsets.get(id(lk.run), 0.0)

    def apply(self, slot: Slot) -> dict[int, dict[str, str]] | None:
        if not any(lk.live for lk in self.links):
            return None
        configs: dict[int, dict[str, str]] = {}
        _each(self.links, lambda lk: configs.__setitem__(id(lk), lk.ask(f"apply {slot.variant}", Applied).config))
        return configs

    def run(self, slot: Slot, placed: object, progress: Callable[[FioProgress], None]) -> list[HostRun]:
        assert isinstance(placed, dict)
        _one_slot(self.links, self.plan, slot.index, slot.variant, len(self.order), placed, self.on_line)
        _close_failed(self.runs)
        return self.runs

    def goodbye(self) -> dict[int, list[tuple[float, str]]]:
        _each(self.links, _bye)
        for lk in self.links:
            if lk.live and lk.cut is not None:  # a bound broken after its last answer: it fails all the same
                lk.fail(lk.cut)
        return {id(lk.run): lk.switches for lk in self.links}

    def end(self) -> IoschedError | None:
        """fio's clients killed and every host's input closed: each puts its device back and ends; waited for."""
        for lk in self.links:
            lk.close()
        _end_sessions(self.links)
        shutil.rmtree(self.folder, ignore_errors=True)
        return None

    def after(self) -> None:
        _each_after(self.links, self.plan)


class LockstepCourse(Course[list[HostRun], list[HostRun]]):
    """A lockstep fleet's course: the slots of the balanced order from the first not yet run (a resumed fleet's),
    the fleet saved after each; its stop rule, every live host across its boundary. Each host's compare is its
    document, kept by the executor."""

    saves = True
    saves_idle = False  # before any slot ran, a resumed fleet's saved file stays as it was

    def __init__(self, executor: LockstepRuns) -> None:
        order, first = executor.order, executor.plan.first
        super().__init__([Slot(n, vi) for n, vi in enumerate(order) if n >= first], len(order))
        self.executor = executor

    def record(self, doc: list[HostRun], slot: Slot, run: list[HostRun], took: float) -> list[HostRun]:
        return doc

    def note(self, doc: list[HostRun], text: str) -> list[HostRun]:
        return doc

    def stop(self, doc: list[HostRun], slot: Slot, run: list[HostRun]) -> Stop | None:
        return Stop() if self.executor.crossed(slot.index) else None

    def finished(self, doc: list[HostRun]) -> list[HostRun]:
        self.executor.finish()
        return doc

    def cancelled(self, doc: list[HostRun], why: str) -> list[HostRun]:
        self.executor.stopped(why)
        return doc

    def after(self, doc: list[HostRun]) -> list[HostRun]:
        self.executor.after()
        return doc


class Boundaries:
    """`--until-verdict` in lockstep: each host's compare carries the sequential boundary and is judged at its
    own looks, as one run there would be; the fleet stops once every live host has crossed its boundary (a host
    that crossed early runs on with the others: it is judged at a later planned look, which keeps its false
    positive rate, since a rejection there is one of the crossings the boundary allows for)."""

    def __init__(self, plan: Lockstep, hosts: list[HostRun]) -> None:
        self.verdicts: dict[int, RunningVerdict] = {}
        if not plan.until_verdict:
            return
        labels = [v.label for v in plan.variants]
        for h in hosts:
            doc = h.doc
            if doc is not None and doc.sequential is not None:
                verdict = RunningVerdict(labels, plan.alpha, plan.metric, "compare", doc.sequential)
                for r in doc.runs:  # a resumed host's saved runs first
                    verdict.add(r)
                self.verdicts[id(h)] = verdict

    def crossed(self, hosts: list[HostRun], n: int, on_line: Callable[[str, str], None]) -> bool:
        """Each live host's run of slot ``n`` added; True once every live host has crossed its boundary."""
        if not self.verdicts:
            return False
        live = [h for h in hosts if h.live and id(h) in self.verdicts]
        for h in live:
            verdict = self.verdicts[id(h)]
            run = run_of(h, n)
            if run is not None and not verdict.decided and verdict.should_stop(run):
                on_line("fleet", f"{h.host.name}: boundary crossed at {verdict.decided_at} runs per variant")
        return bool(live) and all(self.verdicts[id(h)].decided for h in live)


def _end_sessions(links: list[Link], wait_s: float = 30.0) -> None:
    """Every session ended: each host's input closed (its iosched puts its device back and exits, and so does
    ssh), then, for all of them together at most ``wait_s``, waited for; a session still there is ended."""
    for lk in links:
        lk.close()
    deadline = time.monotonic() + wait_s
    for lk in links:
        if lk.child.wait(timeout=max(deadline - time.monotonic(), 0.0)) is None:
            lk.child.signal_group(signal.SIGTERM)
            if lk.child.wait(timeout=5) is None:
                lk.child.signal_group(signal.SIGKILL)
                lk.child.wait(timeout=5)


def _close_failed(hosts: list[HostRun]) -> None:
    """A failed host keeps the runs it finished (saved, and resumable), its document cancelled with the reason;
    it is judged no more (core/statistics/pooled.py pools the others)."""
    for h in hosts:
        doc = h.doc
        if h.status == "failed" and doc is not None and not doc.runs:
            h.doc = None  # nothing finished: its reason says it all
        elif h.status == "failed" and doc is not None and doc.status == "running":
            h.change(note=f"its session ended after {len(doc.runs)} run(s): {h.reason}", status="cancelled",
                     finished=time.time())


def idle_s(plan: Lockstep) -> float:
    """How long a host waits for the controller's next line before it puts its device back by itself: the longest
    a run may take (every host's client at once), a settle, and a few answers' time, with room to spare."""
    return min(86400.0, (timeout_of(plan.job, plan.runtime) or 3600.0) + plan.settle + 4 * ANSWER_S + 120.0)


def _open(run: HostRun, n: int, folder: Path, plan: Lockstep, on_line: Callable[[str, str], None]) -> Link:
    host = run.host
    session = secrets.token_hex(12)
    local = folder / f"{n}.sock"
    remote = [plan.iosched, "fleet-host", host.device, "--schedulers", plan.spec, "--job", plan.job.name,
              "--session", session, "--idle-s", f"{idle_s(plan):.0f}"]
    argv = dies_with_us(host.ssh_argv(remote, plan.ssh, tie=False, forward=(str(local), str(socket_path(session)))),
                        sig="TERM")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
    except OSError as e:
        raise IoschedError(f"cannot start ssh: {e.strerror or e}") from None
    return attach(run, local, proc, on_line)


def attach(run: HostRun, local: Path, proc: subprocess.Popen[str], on_line: Callable[[str, str], None]) -> Link:
    """A link over ``proc``'s pipes: its answers queued, its stderr said line by line."""
    link = Link(run, local, proc, Child(proc))
    threading.Thread(target=_read_answers, args=(proc.stdout, link), daemon=True).start()
    link.stderr_reader = threading.Thread(target=_read_stderr, args=(link, on_line), daemon=True)
    link.stderr_reader.start()
    return link


def _ready(link: Link, folder: Path, plan: Lockstep) -> None:
    """The host's first answer: its identity and the configuration found, or why it refused."""
    ready = link.exchange(None, timeout=ANSWER_S + 30)
    got = read_answer(Ready, ready)
    if isinstance(got, str):
        raise LinkLost(f"its iosched's first answer was not understood: {got}")
    want = f"/dev/{link.run.host.device}"
    if got.target.path != want or not isinstance(got.original.get("scheduler"), str):
        raise LinkLost("its iosched's first answer was not understood: it names another device, or no scheduler")
    link.ready = got
    link.run.before = got.original["scheduler"]
    _probe_forward(link.local)
    link.job_path = folder / f"{link.local.stem}.fio"
    write_file(link.job_path, job_file_text(plan.job, plan.runtime, want))


def _probe_forward(local: Path, wait_s: float = 1.0) -> None:
    """Whether the forward reaches the host's fio server: ssh takes the connection here, then asks the host's sshd
    for the other end, and closes it at once when that sshd will not forward to a unix socket. A server that is
    there says nothing until spoken to: silence for ``wait_s`` is a forward that works."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sk:
        sk.settimeout(wait_s)
        try:
            sk.connect(str(local))
            closed = sk.recv(1) == b""
        except TimeoutError:
            return
        except OSError as e:
            raise LinkLost(f"its forward to fio's server could not be reached here: {e.strerror or e}") from None
    if closed:
        raise LinkLost("its sshd will not forward fio's socket (AllowStreamLocalForwarding or DisableForwarding in "
                       "its sshd_config): --independent runs without forwarding")


def _one_slot(links: list[Link], plan: Lockstep, n: int, vi: int, total: int, configs: dict[int, dict[str, str]],
              on_line: Callable[[str, str], None]) -> None:
    v = plan.variants[vi]
    _each(links, lambda lk: _begin(lk))
    fio_out: dict[int, tuple[Any, str | None]] = {}

    def load(lk: Link) -> None:
        assert lk.job_path is not None
        # Fenced in: the client sends its server any file the server names, and this host trusts no other.
        argv = fenced([fio_binary(), f"--client=sock:{INSIDE / lk.local.name}", "--output-format=json+",
                       "--eta=never", str(INSIDE / lk.job_path.name)], lk.local.parent)
        lk.fio = fio = FioRun(argv, expected_s=expected_of(plan.job, plan.runtime))
        if lk.stopping:  # closed while this was being set up: it must not run its whole duration
            fio.stop()
        try:
            fio_out[id(lk)] = (fio.run(timeout_of(plan.job, plan.runtime)), None)
        except FioFailed as e:
            fio_out[id(lk)] = (None, str(e))
        finally:
            lk.fio = None

    _each(links, load)  # every host's client at once

    def close_window(lk: Link) -> None:
        result, why = fio_out.get(id(lk), (None, "fio did not run"))
        window = lk.ask(f"end {result.total_ios if result is not None else 0}", Window)
        if result is None:
            lk.ask("restart", Done)  # whatever job the failed client left on the host is gone before the next run
        if window.end < window.start:
            raise LinkLost("its iosched's answer to 'end' was not understood: its window ends before it starts")
        metrics = window.metrics.as_metrics()
        if why is None and window.drift is not None:
            why = window.drift[:300]
        start, end = window.start + lk.offset, window.end + lk.offset
        run = hold_to_range(RunDoc(  # a figure out of range: the run invalid, not the host failed
            index=n, variant=v.label, start=start, end=end, valid=why is None, invalid_reason=why,
            config=configs[id(lk)], metrics={**(result.metrics() if result is not None else {}), **metrics},
            fio=result.raw if result is not None else None))
        lk.change(run=_check_run(lk, run))

    _each(links, close_window)
    said = []
    for lk in links:
        r = run_of(lk.run, n)
        if r is not None:
            iops = r.metrics.get("iops")
            said.append(f"{lk.run.host.name} {iops:,.0f} IOPS" if r.valid and iops is not None
                        else f"{lk.run.host.name} invalid: {r.invalid_reason}")
    on_line("fleet", f"run {n + 1}/{total} ({v.label}): " + "; ".join(said or ["no host"]))


def run_of(host: HostRun, n: int) -> RunDoc | None:
    """The host's run of slot ``n``, if it is its last."""
    doc = host.doc
    return doc.runs[-1] if doc is not None and doc.runs and doc.runs[-1].index == n else None


def _check_run(link: Link, run: RunDoc) -> RunDoc:
    """The run and the host's document read back as a saved compare before they join it: a host whose answers
    (or whose fio server's figures) would make the saved file unreadable fails instead. The run as read back (by
    the strict decoder, as a saved one is) is what joins it."""
    doc = link.run.doc
    if doc is None:
        return run
    try:
        read = read_experiment(encode(replace(doc, runs=[run])), link.run.host.name)
        check_host_run(read.runs[0], len(doc.runs) + 1)
    except IoschedError as e:
        raise LinkLost(f"its answers do not read as a compare: {e}") from None
    return read.runs[0]


def _begin(link: Link) -> None:
    link.ask("begin", Done)


def _bye(link: Link) -> None:
    """The host puts its device back and says which switches it made (on its session's clock)."""
    link.switches = list(link.ask("bye", Bye).switches)


def _document(run: HostRun, ready: Ready, plan: Lockstep, order: list[int], others: list[str],
              seq: SequentialDoc | None) -> tuple[CompareDoc, float]:
    """The host's compare document, as its own iosched would have written it (from ``ready``, its first answer),
    and the offset its runs' times get; a resumed host's saved one goes on, its runs kept and this session's after
    them."""
    host = run.host
    saved = plan.saved.get(host.name)
    if saved is not None:
        offset = max((r.end for r in saved.runs), default=0.0) + 1.0
        done = max((r.index + 1 for r in saved.runs), default=0)
        missed = f" (it missed runs {done + 1} to {plan.first})" if done < plan.first else ""
        return replace(saved, notes=[*saved.notes, f"resumed at run {plan.first + 1} of {len(order)}{missed}, in "
                                                   f"lockstep with {', '.join(others) or 'no other host'}"],
                       status="running", finished=None), offset
    if plan.first:
        note = f"joined the lockstep at run {plan.first + 1} of {len(order)} (it had no runs saved)"
    else:
        note = (f"run in lockstep with {', '.join(others) or 'no other host'}: each variant switched on every "
                "host together, the load driven by fio's client through this host's fio server")
    target = Target(host.device, ready.target.path, "device", note=ready.target.note)
    return CompareDoc(
        started=ready.started, kernel=ready.kernel, machine=ready.machine, host=ready.host, device=ready.device,
        variants=[v.doc() for v in plan.variants], order=[plan.variants[i].label for i in order],
        repeat=plan.repeat, drop_caches=False, settle_s=plan.settle,
        workload=Workload(plan.job, target, plan.runtime).doc(), original=ready.original, runs=[], notes=[note],
        status="running", traced=False, sequential=seq, conditions=ready.conditions,
        primary_metric=plan.metric), 0.0  # what the boundary watches: a resumed fleet watches the same


def _each_after(links: list[Link], plan: Lockstep) -> None:
    """The controller's own look at each host's device once its session has ended."""

    def after(lk: Link) -> None:
        if lk.run.status == "cancelled":  # Ctrl-C: no new session is opened, the wait for each host's end was it
            lk.run.check = "not read again after Ctrl-C: its iosched puts it back when its session ends"
        elif lk.run.before is not None:
            lk.run.after, lk.run.check, broke = read_scheduler(lk.run.host, plan.iosched, plan.ssh)
            if broke and lk.run.status == "done":  # its runs came before; a host that says too much fails all the same
                lk.run.status, lk.run.reason = "failed", lk.run.check

    threads = [threading.Thread(target=after, args=(lk,), daemon=True) for lk in links]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
