"""Run a job's replicas to an outcome with KubeDL's semantics.

- Replicas start in the operator's order: a role with upstream roles starts once every replica
  of those has started (KubeDL's DAG conditions wait for them to be Running).
- A replica that exits 0 is done; the job succeeds as soon as one of the success rule's replica
  sets has all exited 0 (the job kind's rule: TF chief, XGBoost master, PyTorch everyone, ...);
  the remaining replicas are then stopped, and recorded as stopped, not as failures.
- A non-zero exit fails the job, unless it is one of ExitCode's transient codes (or the run asks
  for unconditional restarts) and restarts remain: then only that replica is recreated, as
  KubeDL's failover deletes only the failed pod. Its peers keep running; one that then exits
  non-retryably (a collective that lost a rank) fails the job, as on a cluster.
- A replica whose process tree goes over its memory limit is SIGKILLed, as the kernel's OOM
  killer ends a container over its `limits.memory`: exit 137, retryable as above; one that holds
  more /dev/shm than its pod's gets SIGBUS (exit 135, not retried), as on a cluster (memlimit).
- A pod deleted through the API (`request_delete`) is judged by the policy's DeletedPod rule
  (on the platform's Kubernetes the kubelet marks it Failed first); an evicted one stays Failed
  and only ExitCode fails it over. A deletion that finds its replica gone, or after which every
  other replica exits 0 (the job was finishing), misses and says so.
- A failed job's reason names its first cause (trainstack.local.causes).
- On a Kubeflow Trainer environment (`Policy.scope` SET) a failure of any exit code, a deleted
  or an evicted pod restarts the whole set instead, as JobSet's RestartJobSet recreates every
  Job: every replica stopped, then all started again, one restart counted
  (trainstack.trainer.restart).
- The timeout, like activeDeadlineSeconds, counts from the first start across restarts.
- A stop request (SIGINT/SIGTERM to the runner) stops every replica: SIGTERM to each process
  group, SIGKILL after the grace period (at once on a second request), then a sweep for strays.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence

from trainstack import recovery
from trainstack.kubedl import DeletedPod
from trainstack.local import causes, procgroup
from trainstack.local.deadman import DeadmanSwitch
from trainstack.local.exitcodes import describe, is_retryable, normalize
from trainstack.local.launch import ReplicaLaunch
from trainstack.local.memlimit import MemoryWatch, full_pod_shm
from trainstack.local.replicaset import EARLY_S, TICK_S, ReplicaSet
from trainstack.local.supervision import Observer as Observer
from trainstack.local.supervision import Outcome as Outcome
from trainstack.local.supervision import Policy as Policy
from trainstack.local.supervision import RestartScope as RestartScope
from trainstack.registry.model import Restart, RunStatus


class Supervisor(ReplicaSet):
    def __init__(
        self,
        launches: Sequence[ReplicaLaunch],
        policy: Policy,
        observer: Observer | None = None,
        deadman: DeadmanSwitch | None = None,
        tag: str | None = None,
        memory: MemoryWatch | None = None,
    ) -> None:
        super().__init__(launches, policy, observer, deadman, tag, memory)
        # counted recreations per replica, for what the operator counts against backoffLimit
        self._counted: dict[str, int] = dict.fromkeys(self._launches, 0)
        # deleted pods a custom run's Job controller counted as failed (DeletedPod.FAILED)
        self._failed_pods = 0
        # (replica key, evicted, reason) requests from outside: a pod deleted or evicted
        self._deletions: list[tuple[str, bool, str]] = []
        # exits found while the loop was elsewhere (a deletion's settle), for it to judge
        self._carried: list[tuple[str, int]] = []
        # the recreations so far, for a failure reason that names its first cause
        self._causes = causes.Causes()

    def request_stop(self) -> None:
        """Safe to call from a signal handler: it only counts; the loop acts within a tick."""
        self._stop_requests += 1

    def request_delete(
        self, key: str, *, evicted: bool = False, reason: str = recovery.DELETED
    ) -> None:
        """What happens to a replica's pod when it is deleted through the API (drain,
        preemption, `kubectl delete`) or, `evicted`, by the kubelet; acted on within a tick.
        Safe from another thread: it only appends.

        Deleted: judged by the policy's DeletedPod rule for the replica's role (`_deleted`);
        without one the pod is only gone and the next reconcile creates it again, uncounted
        (KubeDL v0.5.0 pkg/job_controller/pod.go:274-281, on Kubernetes before 1.27).
        Evicted: the pod stays, Failed with reason Evicted; only ExitCode fails it over
        (failover.go:43-53, pkg/util/train/train_util.go:60-65), counted like any recreation;
        otherwise it fails the job. Both stop the replica as the kubelet stops a pod: SIGTERM,
        then SIGKILL after the grace period. `reason` names a deletion in the recovery history
        (`preempted` for a preemption drill)."""
        self._deletions.append((key, evicted, recovery.EVICTED if evicted else reason))

    def run(self) -> Outcome:
        if self._deadman is not None:
            self._deadman.wait_ready()
        started = time.monotonic()
        try:
            self._start_ready()
            return self._loop(started)
        finally:
            self._stop(list(self._replicas))
            procgroup.kill_tagged(self.tag)
            # Strays that cleared the tag and left the group (adopted when the runner is a
            # subreaper); the sidecar is the one descendant that stays.
            procgroup.kill_adopted({self._deadman.pid} if self._deadman is not None else set())
            if self._deadman is not None:
                # Not waited for: it exits while the runner commits and records the end.
                self._deadman.disarm(wait=False)

    # --- the loop ----------------------------------------------------------------------------

    def _loop(self, started: float) -> Outcome:
        policy = self._policy
        while True:
            if self._stop_requests:
                self._stop(list(self._replicas), ended=True)
                return self._outcome(RunStatus.CANCELLED, "stopped by a signal to the runner")
            if policy.timeout_seconds and time.monotonic() - started > policy.timeout_seconds:
                self._stop(list(self._replicas), ended=True)
                return self._outcome(
                    RunStatus.FAILED, f"timed out after {policy.timeout_seconds:g}s"
                )
            if self._deletions:
                ended = self._apply_deletions()
                if ended is not None:
                    return ended
            failures = [(k, c) for k, c in self._carried + self._poll() if c != 0]
            self._carried = []
            if failures:
                failures += [(k, c) for k, c in self._settle() if c != 0]
                ended = self._handle_failures(failures)
                if ended is not None:
                    return ended
                continue
            if self._succeeded():
                self._stop(list(self._replicas), ended=True)
                return self._outcome(RunStatus.SUCCEEDED, "")
            self._start_ready()
            self._enforce_memory()
            early = time.monotonic() - started < EARLY_S
            self._wait(self._live_popens(), TICK_S, early=early)

    def _handle_failures(
        self, failures: list[tuple[str, int]], *, deleted: str | None = None
    ) -> Outcome | None:
        """`deleted`: these are the exits of pods deleted through the API (the reason), which the
        kubelet marked Failed (DeletedPod.EXIT_THEN_RECREATED, DeletedPod.EXIT)."""
        policy = self._policy
        failures = causes.ordered(failures, self._from_outside)
        told = "; ".join(self._exit_text(k, c) for k, c in failures)
        if deleted is not None:
            told = f"{'; '.join(k for k, _ in failures)}'s pod was deleted ({deleted}): {told}"
        if policy.scope is RestartScope.SET:
            return self._restart_set(failures, told, deleted)
        final = {self._launches[k].role for k, _ in failures} & set(policy.final_roles)
        retryable = [
            k
            for k, c in failures
            if is_retryable(c, unconditional=policy.unconditional)
            and self._launches[k].role not in final
            # OnFailure restarts a container in place, never a deleted pod's, and KubeDL
            # fails a Failed pod over only under ExitCode (pkg/job_controller/failover.go:48-50).
            and not (deleted is not None and policy.unconditional)
        ]
        if len(retryable) < len(failures):
            # One permanent failure fails the job, whatever else is being recreated.
            self._stop(list(self._replicas), ended=True)
            why = "".join(f": {policy.final_roles[role]}" for role in sorted(final))
            if deleted is not None and policy.unconditional:
                why += ": a deleted pod ends Failed, and only restartPolicy ExitCode fails it over"
            first = self._first_cause(failures)
            return self._outcome(RunStatus.FAILED, f"{first}{told} (not retried{why})")
        if self._counted_restarts() + len(retryable) > policy.max_restarts:
            self._stop(list(self._replicas), ended=True)
            first = self._first_cause(failures)
            return self._outcome(
                RunStatus.FAILED, f"{first}{told}; no restarts left ({policy.limit})"
            )
        self._restarts += len(retryable)
        for key in retryable:
            self._counted[key] += 1
        codes = dict(failures)
        for key in retryable:
            self._record(
                key,
                codes[key],
                deleted or self._reason(key, codes[key]),
                self._exit_text(key, codes[key]),
            )
            self._causes.recreated(key, told if deleted else self._exit_text(key, codes[key]))
        self._observer.restarting(self._restarts, told)
        marker = f"restart {self._counted_restarts()} of {policy.max_restarts} after: {told}"
        # Only the failed replicas are recreated (KubeDL v0.5.0 pkg/job_controller/pod.go
        # ReconcilePods collects podsToFailover, failover.go RecreatePods deletes just those).
        self._stop(retryable)
        for key in retryable:
            # Like a deleted pod, nothing of the old replica survives its recreation.
            procgroup.kill_tagged(
                procgroup.replica_tag(self.tag, key), name=procgroup.REPLICA_TAG_ENV
            )
        for key in retryable:
            self._start(key, marker)
        return None

    def _restart_set(
        self, failures: list[tuple[str, int]], told: str, deleted: str | None
    ) -> Outcome | None:
        """JobSet's RestartJobSet: every replica stopped, those that had exited 0 too, and all
        started again, one restart counted, until the policy's restarts are spent
        (trainstack.trainer.restart)."""
        policy = self._policy
        if self._restarts + 1 > policy.max_restarts:
            self._stop(list(self._replicas), ended=True)
            return self._outcome(RunStatus.FAILED, f"{told}; no restarts left ({policy.limit})")
        self._restarts += 1
        # One restart, recorded once: under the replica whose failure caused it.
        key, code = failures[0]
        self._record(key, code, deleted or self._reason(key, code), f"{told}; the set restarts")
        self._observer.restarting(self._restarts, told)
        marker = f"restart {self._restarts} of {policy.max_restarts} (every replica) after: {told}"
        every = list(self._launches)
        # Stopped as JobSet deletes the Jobs: their exits are the restart's, not failures.
        self._stop(every, ended=True)
        self._stopped.difference_update(every)
        for each in every:
            procgroup.kill_tagged(
                procgroup.replica_tag(self.tag, each), name=procgroup.REPLICA_TAG_ENV
            )
        for each in every:
            self._start(each, marker)
        return None

    def _apply_deletions(self) -> Outcome | None:
        while self._deletions:
            key, evicted, reason = self._deletions.pop(0)
            gone = self._gone(key)
            if gone is not None:
                self._missed(key, reason, gone)
                continue
            self._stop([key], ended=True)  # its exit is the deletion's, judged below
            self._stopped.discard(key)
            code = normalize(self._replicas[key].popen.wait())
            procgroup.kill_tagged(
                procgroup.replica_tag(self.tag, key), name=procgroup.REPLICA_TAG_ENV
            )
            if self._policy.scope is RestartScope.SET:
                # A deleted pod is a failed one to the Job controller, whatever it exits with
                # (no podFailurePolicy), and its Job, with backoffLimit 0, fails the set.
                ended = self._handle_failures([(key, code)], deleted=reason)
            elif evicted:
                ended = self._evicted(key, code)
            elif code != 0 and self._finished_with_peers(key):
                self._stopped.add(key)  # its exit is the deletion's as the job ended
                self._finished.add(key)
                self._missed(
                    key,
                    reason,
                    f"every other replica exited 0 after {key} was stopped: its training had "
                    "ended with theirs, so it is not recreated",
                )
                ended = None
            else:
                ended = self._deleted(key, code, reason)
            if ended is not None:
                return ended
        return None

    def _gone(self, key: str) -> str | None:
        """Why a pod deleted now has nothing to stop: not started yet, or already exited (its
        exit looked at here, so that one not yet seen by the loop is not taken for the
        deletion's); None when it runs."""
        replica = self._replicas.get(key)
        if replica is None:
            return f"{key} had not started yet"
        code = self._codes[key]
        if code is None and replica.popen.poll() is not None:
            code = normalize(replica.popen.returncode)
        return None if code is None else f"{key} had already exited ({describe(code)})"

    def _finished_with_peers(self, key: str) -> bool:
        """Whether a replica just stopped for a deleted pod had finished its work: every other
        replica of the job exits 0 within the settle window (a collective job's ranks end
        together, so their success means it was past its last collective: a DDP master in its
        last moments, its model written). Not for a Job controller's indexes, which are
        independent of each other."""
        rule = self._policy.deleted_pods.get(self._launches[key].role, DeletedPod.RECREATED)
        others = [k for k in self._launches if k != key]
        if not others or rule in (DeletedPod.FAILED, DeletedPod.EXIT):
            return False
        # Exits found meanwhile are the loop's to judge.
        self._carried += self._settle()
        return all(self._codes[k] == 0 for k in others)

    def _missed(self, key: str, reason: str, why: str) -> None:
        text = f"{key}'s pod deletion ({reason}) missed: {why}"
        if reason == recovery.PREEMPTED:
            text = f"preemption drill missed: {why}"
        procgroup.note(self._launches[key], text)
        self._observer.missed(text)

    def _deleted(self, key: str, code: int, reason: str) -> Outcome | None:
        """A pod deleted through the API, as the controller judges it (DeletedPod, from the
        kind and the platform's Kubernetes version: jobplan)."""
        rule = self._policy.deleted_pods.get(self._launches[key].role, DeletedPod.RECREATED)
        if rule is DeletedPod.FAILED:
            return self._count_deleted(key, code, reason)
        # Succeeded, then removed: KubeDL creates the missing pod again while the job goes on.
        gone = code == 0 and rule is DeletedPod.EXIT_THEN_RECREATED and not self._succeeded()
        if rule is DeletedPod.RECREATED or gone:
            self._record(key, code, reason, f"{key}'s pod was deleted ({reason})", counted=False)
            self._causes.recreated(key, f"{key}'s pod was deleted ({reason})")
            self._start(key, f"recreated after its pod was deleted: {reason} (not counted)")
            return None
        if code == 0:
            return None  # Succeeded: the success rule reads it; a custom run's index is done
        return self._handle_failures([(key, code)], deleted=reason)

    def _count_deleted(self, key: str, code: int, reason: str) -> Outcome | None:
        """A custom run's Job controller, without a podFailurePolicy, counts a deleted pod as
        failed at once, whatever it exits with, and against backoffLimit."""
        policy = self._policy
        told = f"{key}'s pod was deleted ({reason}), which the Job controller counts as failed"
        if self._counted_restarts() + 1 > policy.max_restarts:
            self._stop(list(self._replicas), ended=True)
            return self._outcome(RunStatus.FAILED, f"{told}; no restarts left ({policy.limit})")
        self._restarts += 1
        self._failed_pods += 1
        self._record(key, code, reason, told)
        self._causes.recreated(key, told)
        self._observer.restarting(self._restarts, told)
        self._start(
            key, f"restart {self._counted_restarts()} of {policy.max_restarts} after: {told}"
        )
        return None

    def _evicted(self, key: str, code: int) -> Outcome | None:
        policy = self._policy
        self._record(key, code, recovery.EVICTED, f"{key}'s pod was evicted")
        exit_code_policy = policy.max_restarts > 0 and not policy.unconditional
        if not exit_code_policy or self._launches[key].role in policy.final_roles:
            self._stop(list(self._replicas), ended=True)
            return self._outcome(
                RunStatus.FAILED,
                f"{key} was evicted (not retried: only restartPolicy ExitCode fails an "
                "evicted pod over)",
            )
        if self._counted_restarts() + 1 > policy.max_restarts:
            self._stop(list(self._replicas), ended=True)
            return self._outcome(
                RunStatus.FAILED, f"{key} was evicted; no restarts left ({policy.limit})"
            )
        self._restarts += 1
        self._counted[key] += 1
        self._causes.recreated(key, f"{key} was evicted")
        self._observer.restarting(self._restarts, f"{key} was evicted")
        self._start(key, f"restart {self._restarts} of {policy.max_restarts} after eviction")
        return None

    def _counted_restarts(self) -> int:
        """The restarts that count against the budget. Under `unconditional` (OnFailure) the
        operator sums the restartCounts of the pods still Running, so a replica that exited 0
        (its pod Succeeded) takes its restarts out of the sum: KubeDL v0.5.0
        pkg/job_controller/job.go:568-572 (pastBackoffLimit), and Kubernetes' Job controller
        for a custom run (pkg/controller/job/job_controller.go, pastBackoffLimitOnFailure:
        Running or Pending pods only). ExitCode recreations are counted in all: the operator
        sets no bound on them, the local runner its own (jobplan.restart_budget)."""
        if not self._policy.unconditional:
            return self._restarts
        running = sum(n for key, n in self._counted.items() if self._codes[key] != 0)
        # A custom run's deleted pods are in the Job's status.failed for good.
        return running + self._failed_pods

    def _record(
        self, key: str, code: int | None, reason: str, detail: str, *, counted: bool = True
    ) -> None:
        launch = self._launches[key]
        now = time.time()
        began = self._began.get(key)
        restart = Restart(
            at=now,
            role=launch.role,
            index=launch.index,
            exit_code=code,
            reason=reason,
            detail=detail,
            ran_seconds=None if began is None else max(0.0, now - began),
            counted=counted,
        )
        self.history.append(restart)
        self._observer.restarted(restart)

    def _from_outside(self, key: str, code: int) -> bool:
        """Ended from outside the job: SIGKILLed, over its memory limit, or hung."""
        return causes.killed(code) or key in self._oom or key in self._inplace.hung

    def _first_cause(self, failures: list[tuple[str, int]]) -> str:
        """An earlier recreation that these failures followed (their replicas running when it
        happened), said first; "" for none."""
        began = [self._began[key] for key, _ in failures if key in self._began]
        return self._causes.first(began) or ""

    def _reason(self, key: str, code: int) -> str:
        if key in self._inplace.hung:
            return recovery.HUNG
        over = self._oom.get(key)
        return recovery.exit_reason(code, oom=over is not None and code == 128 + over.signal)

    def _exit_text(self, key: str, code: int) -> str:
        hung = self._inplace.hung.get(key)
        if hung is not None:
            return f"{key} exited with {describe(code)}, {hung}"
        over = self._oom.get(key)
        if over is not None and code == 128 + over.signal:
            return f"{key} exited with {describe(code)}, {over.describe()}"
        shm = self._launches[key].pod_shm
        if shm is not None and code == 128 + signal.SIGBUS:
            return f"{key} exited with {describe(code)}, {full_pod_shm(shm)}"
        return f"{key} exited with {describe(code)}"
