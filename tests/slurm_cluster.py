"""A real one-node Slurm cluster on localhost, for the tests of memplan's Slurm executor.

The executor submits through ``submitit``, which shells out to ``sbatch``,
``squeue``, ``scancel`` and ``sacct``; its tests must talk to a real Slurm, not a
mock. :func:`start_cluster` starts ``munged``, ``slurmctld`` and ``slurmd`` as
root in a directory of their own (key, socket, ``slurm.conf``, state, spool,
pid and log files), on free TCP ports, without touching ``/etc/slurm`` or
``/etc/munge``; client commands find it through the ``SLURM_CONF`` environment
variable (:meth:`SlurmCluster.env`). :meth:`SlurmCluster.stop` cancels what is
still queued or running, stops the daemons and kills any job process left over.

What this cluster does and does not do (Slurm 22.05, Debian 12):

* no ``slurmdbd``: ``sacct`` answers "Slurm accounting storage is disabled"
  (exit 1). Finished jobs are written to ``jobcomp.txt`` (``jobcomp/filetxt``),
  which ``sacct -c`` reads, and stay visible to ``squeue --states=all`` and
  ``scontrol show job`` for ``MinJobAge`` seconds.
* ``--mem`` is enforced by polling, not by cgroups (``proctrack/linuxproc``,
  ``task/none``, as a container allows): ``jobacct_gather/linux`` every second
  with ``OverMemoryKill`` kills a job over it, which then ends as FAILED, and
  where the work runs in an ``srun`` step (submitit's default) only the step's
  log says "task 0: Out Of Memory". A cluster with ``task/cgroup`` ends such a
  job as OUT_OF_MEMORY; this one cannot show that.
  A request above the node's ``RealMemory`` is refused by ``sbatch``.

Slurm is Debian's: ``apt-get install -y slurm-wlm munge`` (``.ci/run`` does).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

INSTALL_HINT = "apt-get install -y slurm-wlm munge (as root)"
REQUIRED_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch")
# In the order they start; munged in the foreground logs to its output (.out), not its .log.
DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITION = "debug"
CLUSTER_NAME = "memplan-test"
# The share of this machine's memory the node offers to jobs (RealMemory).
MEMORY_SHARE = 0.75
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
# Finished jobs stay visible to squeue --states=all and scontrol for this long.
MIN_JOB_AGE_S = 3600
LOG_TAIL_CHARS = 4_000
COMMAND_TIMEOUT_S = 30.0
# squeue's states for jobs that are not finished yet.
UNFINISHED_STATES = "PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED,REQUEUED,RESIZING"


def slurm_available() -> str | None:
    """None if this machine can run the test cluster, else why not and how to fix it."""
    missing = [name for name in REQUIRED_PROGRAMS if _which(name) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} not found); {INSTALL_HINT}"
    if os.geteuid() != 0:
        return (
            f"the test Slurm cluster runs its daemons as root, and this is uid {os.geteuid()}; "
            f"run the tests as root (Slurm itself: {INSTALL_HINT})"
        )
    return None


def _which(name: str) -> str | None:
    # The daemons live in /usr/sbin, which a non-login root shell may not have on PATH.
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def _free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that are free on 127.0.0.1 now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _node_hardware(slurmd: str) -> dict[str, int]:
    """The CPU topology ``slurmd -C`` sees, and this machine's memory in MB."""
    hardware: dict[str, int] = {}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        output = subprocess.run(
            [slurmd, "-C"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
        ).stdout
        for token in output.split():
            key, _, value = token.partition("=")
            if value.isdigit():
                hardware[key] = int(value)
    if "CPUs" not in hardware:
        hardware = {"CPUs": len(os.sched_getaffinity(0))}
    if "RealMemory" not in hardware:
        hardware["RealMemory"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return hardware


def _tail(path: Path) -> str:
    if not path.exists():
        return "(no log)"
    return path.read_text(errors="replace")[-LOG_TAIL_CHARS:]


@dataclass
class SlurmCluster:
    """A running test cluster: where its ``slurm.conf`` is, what its node offers."""

    root: Path
    conf_path: Path
    partition: str
    node_name: str
    cpus: int
    memory_mb: int
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    stopped: bool = False

    def env(self) -> dict[str, str]:
        """``os.environ`` with ``SLURM_CONF`` pointing at this cluster (for client commands)."""
        return os.environ | {"SLURM_CONF": str(self.conf_path)}

    def command(
        self, *args: str, check: bool = False, timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command (``sbatch``, ``squeue``...) against this cluster."""
        return subprocess.run(
            list(args),
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )

    def logs(self) -> str:
        """The tails of the daemons' logs and output, for error messages."""
        paths = [self.root / f"{name}.{kind}" for name in DAEMONS for kind in ("log", "out")]
        return "\n".join(
            f"--- {path} ---\n{_tail(path)}"
            for path in paths
            if path.exists() and path.stat().st_size
        )

    def node_state(self) -> str:
        """The node's state as ``sinfo`` reports it (``idle``, ``mixed``...), or ``""``."""
        result = self.command("sinfo", "-h", "-N", "-n", self.node_name, "-o", "%T")
        return result.stdout.strip() if result.returncode == 0 else ""

    def stop(self) -> None:
        """Cancel the cluster's jobs, stop its daemons and kill any job process left over."""
        if self.stopped:
            return
        self.stopped = True
        if self._running("slurmctld") and self._running("slurmd"):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                self.command("scancel", "--quiet", f"--partition={self.partition}")
                deadline = time.monotonic() + STOP_TIMEOUT_S
                while (
                    time.monotonic() < deadline
                    and self.command(
                        "squeue", "-h", "-o", "%i", f"--states={UNFINISHED_STATES}"
                    ).stdout.strip()
                ):
                    time.sleep(0.2)
        for name in reversed(DAEMONS):
            process = self.processes.get(name)
            if process is not None:
                stop_process_group(process)
        # A job's slurmstepd and tasks are not the daemons' children: find them by the
        # SLURM_CONF they inherited (from slurmd, or from the submitting environment).
        marker = f"SLURM_CONF={self.conf_path}".encode()
        for pid in _pids_with_environ(marker):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def _running(self, name: str) -> bool:
        process = self.processes.get(name)
        return process is not None and process.poll() is None


def stop_process_group(process: subprocess.Popen, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM a process started in a session of its own, and its group; SIGKILL if it stays."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=timeout_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _pids_with_environ(marker: bytes) -> list[int]:
    """Processes (other than this one) whose initial environment holds ``marker``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            pids.append(int(entry.name))
    return pids


def _slurm_conf(
    root: Path,
    *,
    node_name: str,
    hardware: dict[str, int],
    memory_mb: int,
    ctld_port: int,
    slurmd_port: int,
    munge_socket: Path,
) -> str:
    first_job_id = random.randint(1_000, 1_000_000)
    topology = " ".join(
        f"{key}={hardware[key]}"
        for key in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore")
        if key in hardware
    )
    return f"""\
# A one-node test cluster written by tests/slurm_cluster.py; everything lives in {root}.
ClusterName={CLUSTER_NAME}
SlurmctldHost={node_name}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig={root}/plugstack.conf
MailProg=/bin/true
# No cgroups: tasks are tracked by process lineage, and --mem is enforced by polling
# the tasks' memory every second (over it, the job is killed and ends as FAILED).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherParams=OverMemoryKill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# A job that asks for no memory gets its CPUs' share, not the whole node.
DefMemPerCPU={max(1, memory_mb // hardware["CPUs"])}
MpiDefault=none
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=1
# No slurmdbd: sacct -c reads the finished jobs from this file.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.txt
# Job ids unlike another test cluster's on this host, so two sessions' jobs never mix up.
FirstJobId={first_job_id}
ReturnToService=2
SlurmdTimeout=30
SlurmctldTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge={MIN_JOB_AGE_S}
NodeName={node_name} NodeAddr=127.0.0.1 {topology} RealMemory={memory_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes={node_name} Default=YES State=UP MaxTime=INFINITE
"""


def start_cluster(root: Path, *, timeout_s: float = START_TIMEOUT_S) -> SlurmCluster:
    """Start munged, slurmctld and slurmd in ``root``; return once the node is idle.

    Raises RuntimeError, with the daemons' log tails,
    if the node is not idle within ``timeout_s``; whatever did start is stopped first.
    """
    reason = slurm_available()
    if reason is not None:
        raise RuntimeError(reason)
    root = Path(root).resolve()
    for sub in ("state", "spool"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    # munged refuses a key others can read.
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = root / "munge.socket"
    (root / "plugstack.conf").write_text("")

    slurmd = _which("slurmd")
    assert slurmd is not None
    hardware = _node_hardware(slurmd)
    node_name = socket.gethostname().split(".")[0]
    memory_mb = max(1024, int(hardware["RealMemory"] * MEMORY_SHARE))
    ctld_port, slurmd_port = _free_ports(2)
    conf_path = root / "slurm.conf"
    conf_path.write_text(
        _slurm_conf(
            root,
            node_name=node_name,
            hardware=hardware,
            memory_mb=memory_mb,
            ctld_port=ctld_port,
            slurmd_port=slurmd_port,
            munge_socket=munge_socket,
        )
    )
    cluster = SlurmCluster(
        root=root,
        conf_path=conf_path,
        partition=PARTITION,
        node_name=node_name,
        cpus=hardware["CPUs"],
        memory_mb=memory_mb,
    )
    commands = {
        "munged": [
            str(_which("munged")),
            "--foreground",
            "--force",
            f"--key-file={key}",
            f"--socket={munge_socket}",
            f"--pid-file={root / 'munged.pid'}",
            f"--log-file={root / 'munged.log'}",
            f"--seed-file={root / 'munged.seed'}",
        ],
        # -D: in the foreground, so stop() can wait for them; -i: ignore old state.
        "slurmctld": [str(_which("slurmctld")), "-D", "-i", "-f", str(conf_path)],
        "slurmd": [slurmd, "-D", "-f", str(conf_path), "-N", node_name],
    }
    # The daemons (and the jobs' slurmstepd) carry SLURM_CONF, which stop() looks for.
    env = cluster.env()
    try:
        for name, command in commands.items():
            with (root / f"{name}.out").open("wb") as out:
                cluster.processes[name] = subprocess.Popen(
                    command,
                    cwd=root,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if name == "munged":
                _wait_for(lambda: munge_socket.exists(), cluster, "munged's socket", timeout_s)
        _wait_for(lambda: cluster.node_state() == "idle", cluster, "an idle node", timeout_s)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_for(
    ready: Callable[[], bool], cluster: SlurmCluster, what: str, timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        for name, process in cluster.processes.items():
            if process.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {process.returncode} while waiting for {what}:\n"
                    f"{cluster.logs()}"
                )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the test Slurm cluster did not come up: still waiting for {what} after "
                f"{timeout_s:g} s "
                f"(sinfo: {cluster.node_state() or 'no answer'!r}):\n{cluster.logs()}"
            )
        time.sleep(0.2)
