"""Scale-out on more than one Ray node: a real multi-node Ray cluster on this machine
(``ray.cluster_utils.Cluster``: a head node with no CPU, where the driver runs, and three worker
nodes of one CPU each, every one its own raylet), every role on the HTTP fake endpoint with a
set latency per call.

- shards land on different worker nodes, never on the driver's, and the merged store equals
  a single-process run of the same tasks;
- a worker node killed while its shard runs: Ray re-runs the shard on another node, which
  resumes from the shard store where the nodes share a disk (stored turns are not played
  again) and starts again from the shard's seed where they do not; either way every
  interaction is finished exactly once and the store equals the single-process run;
- nodes that share no disk (each node's worker folder is its own, unknown to the driver): the
  shard stores come back to the driver as bytes, and the driver never opens a worker folder;
- a worker folder used again by another run: the old shard stores there are set aside, not
  resumed (they used to be, which failed the new run's shards).
"""
import json
import os
import sys
import threading
import time

import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from harness.compose import run_selfscore  # noqa: E402
from harness.config import load_config  # noqa: E402
from harness.scale.ray_tasks import run_on_ray  # noqa: E402
from harness.scale.shards import create_run, plan_of, plan_shards, prepare_shard_file  # noqa: E402
from harness.tasks.datasets import load_dataset  # noqa: E402
from store import StoreReader  # noqa: E402
from tests.crash_harness import ROLES  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402
from tests.fakes import default_responder  # noqa: E402
from tests.test_crash_safety import QUESTIONS, assert_exactly_once_and_equal_to_clean  # noqa: E402
from tests.test_ray_shards import held_until  # noqa: E402


def multinode(test):
    """A test on the cluster: slow (the cluster's start and its workers' imports take most of it)."""
    return pytest.mark.slow(pytest.mark.timeout(420)(test))


DELAY_S = 0.05  # the endpoint's latency per call
MAX_TURNS = 3
WORKER_NODES = 3
DISK_VAR = "DESKBENCH_TEST_NODE_DISK"  # set on each worker node's raylet only: that node's own disk


class Nodes:
    """The cluster and its worker nodes: node id -> (the node, its own disk)."""

    def __init__(self, cluster: Cluster, disks):
        self.cluster, self.disks, self.added = cluster, disks, 0
        self.workers: dict[str, tuple[object, object]] = {}

    def add(self) -> str:
        k, self.added = self.added, self.added + 1
        disk = self.disks / f"node-{k}"
        disk.mkdir()
        node = self.cluster.add_node(num_cpus=1, resources={f"node_{k}": 1}, env_vars={DISK_VAR: str(disk)})
        self.workers[node.node_id] = (node, disk)
        return node.node_id

    def remove(self, node_id: str) -> None:
        node, _ = self.workers.pop(node_id)
        self.cluster.remove_node(node, allow_graceful=False)  # the machine is lost, not stopped

    def disk(self, node_id: str):
        return self.workers[node_id][1]

    @property
    def head(self) -> str:
        return self.cluster.head_node.node_id


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False,
        # a lost node is noticed within about 2 s (the default takes about 15 s)
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4}})
    state = Nodes(cluster, tmp_path_factory.mktemp("node-disks"))
    try:
        for _ in range(WORKER_NODES):
            state.add()
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        assert ray.get_runtime_context().get_node_id() == state.head  # the driver is on the head node
        yield state
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="module")
def six_tasks(tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "six.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "question": q}) + "\n" for i, q in enumerate(QUESTIONS)))
    return path


def config(store, url, concurrency=1):
    return load_config(overrides={"store": str(store),
                                  "roles": {r: {"base_url": url, "model": f"{r}-fake"} for r in ROLES},
                                  "run": {"limit": len(QUESTIONS), "max_turns": MAX_TURNS,
                                          "concurrency": concurrency}})


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(default_responder(solve_at=None), delay_s=DELAY_S) as s:
        yield s


@pytest.fixture(scope="module")
def clean(tmp_path_factory, six_tasks):
    """The single-process run of the same tasks (its own endpoint, to count its requests)."""
    with FakeOpenAIServer(default_responder(solve_at=None), delay_s=DELAY_S) as s:
        cfg = config(tmp_path_factory.mktemp("clean") / "clean.sqlite", s.base_url, concurrency=2)
        run_id, progress = run_selfscore(cfg, load_dataset(str(six_tasks)))
        assert progress.failed == 0
        return StoreReader(cfg.store), run_id, len(s.requests)


def last_board(seen):
    return seen[-1] if seen else {}


@multinode
def test_shards_run_on_different_nodes_and_merge_to_the_single_process_run(
        nodes, server, clean, six_tasks, tmp_path):
    seen, boards = [], set()

    def on_progress(p):
        seen.append({k: dict(v) for k, v in p.shards.items()})
        if not boards:  # where the progress board runs (Ray's actor table, from the GCS)
            boards.update(a["Address"]["NodeID"] for a in ray._private.state.actors().values()
                          if a["ActorClassName"] == "ProgressBoard" and a["State"] == "ALIVE")
    cfg = config(tmp_path / "driver.sqlite", server.base_url)
    result = run_on_ray(cfg, "selfscore", 3, dataset=load_dataset(str(six_tasks)), poll_s=0.1,
                        on_progress=on_progress)
    assert result.errors == [] and result.progress.done == len(QUESTIONS)
    assert boards == {nodes.head}  # on the driver's node (it used to go to a worker node)
    board = last_board(seen)
    hosts = {s: board[s]["node_id"] for s in range(3)}
    assert all(board[s]["attempts"] == 1 for s in range(3))
    assert nodes.head not in hosts.values() and set(hosts.values()) <= set(nodes.workers)
    assert len(set(hosts.values())) >= 2, hosts  # (one node each, with three free nodes)
    assert_exactly_once_and_equal_to_clean(cfg.store, result.run_id, clean[:2], len(QUESTIONS))


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def node_killer(nodes, seen, gate):
    """A progress callback: once shard 0 has stored its first interaction (its second one is
    held at the endpoint), kill the node it runs on, wait for its worker process to be gone,
    then let the endpoint answer."""
    killed = {}

    def on_progress(p):
        seen.append({k: dict(v) for k, v in p.shards.items()})
        first = p.shards.get(0, {})
        if not killed and first.get("done", 0) >= 1 and first.get("attempts") == 1:
            killed.update(node=first["node_id"], pid=first["pid"], at=time.perf_counter())
            nodes.remove(first["node_id"])
            deadline = time.time() + 30
            while alive(first["pid"]) and time.time() < deadline:
                time.sleep(0.05)
            assert not alive(first["pid"]), "the killed node's worker process is still running"
            gate.set()
    on_progress.killed = killed
    return on_progress


@multinode
@pytest.mark.parametrize("shared_disk", [True, False], ids=["shared-disk", "no-shared-disk"])
def test_a_node_killed_mid_run_its_shard_is_rerun_elsewhere(nodes, clean, six_tasks, tmp_path, shared_disk):
    """Two shards on three worker nodes; shard 0's node is killed after its first interaction,
    while its second waits at the endpoint. Shared disk (the worker folder is the driver's
    shard folder, the same path on every node of this machine): the retry on another node
    resumes the shard store, so the first interaction is not played again. No shared disk
    (each node its own folder): the retry starts the shard again from its seed, as documented."""
    gate = threading.Event()
    responders = default_responder(solve_at=None)
    worker_dir = None if shared_disk else f"${DISK_VAR}/kill-{tmp_path.name}"
    with FakeOpenAIServer(held_until("My disk is full", gate, responders), delay_s=DELAY_S) as server:
        seen = []
        on_progress = node_killer(nodes, seen, gate)
        cfg = config(tmp_path / "driver.sqlite", server.base_url)
        try:
            result = run_on_ray(cfg, "selfscore", 2, dataset=load_dataset(str(six_tasks)), worker_dir=worker_dir,
                                max_retries=2, on_progress=on_progress, poll_s=0.1)
        finally:
            gate.set()
            if len(nodes.workers) < WORKER_NODES:
                nodes.add()  # the next test finds three worker nodes again
    killed = on_progress.killed
    assert killed, "shard 0 finished before its node could be killed; the test did not test anything"
    board = last_board(seen)
    assert board[0]["attempts"] == 2 and board[0]["node_id"] not in (killed["node"], nodes.head)
    assert board[1]["attempts"] == 1 and board[1]["node_id"] != killed["node"]
    assert result.errors == [] and result.progress.done == len(QUESTIONS)
    assert_exactly_once_and_equal_to_clean(cfg.store, result.run_id, clean[:2], len(QUESTIONS))

    merged = StoreReader(cfg.store)
    interactions = {i["id"]: i for i in merged.interactions(result.run_id)}
    first, second = result.shards[0].interaction_ids[:2]
    assert first.endswith(":t0") and second.endswith(":t1")

    def agent_calls(iid):
        question = interactions[iid]["question"]
        return len([r for r in server.requests if r["model"] == "agent-fake" and question in json.dumps(r["messages"])])
    n_first, n_second = len(merged.turns(first)), len(merged.turns(second))
    if shared_disk:
        assert agent_calls(first) == n_first  # stored before the kill: not played again
        assert agent_calls(second) <= n_second + 1  # at most the turn in flight was
        assert len(server.requests) < clean[2] + 8  # the shard did not start over
    else:
        assert agent_calls(first) == 2 * n_first  # the retry had no shard store: from the seed
        assert len(server.requests) > clean[2]


# -- no shared disk: the driver never opens a worker's folder
_watch: dict = {"root": None, "seen": []}
_WATCHED = {"open", "os.listdir", "os.scandir", "os.rename", "os.replace", "os.remove", "os.unlink",
            "os.mkdir", "os.rmdir", "shutil.copyfile", "shutil.rmtree", "sqlite3.connect", "glob.glob"}


def _audit(event, args):
    root = _watch["root"]
    if root is None or event not in _WATCHED:
        return
    for a in args:
        if isinstance(a, (str, bytes, os.PathLike)):
            try:
                path = os.path.abspath(os.fsdecode(a))
            except (TypeError, ValueError):
                continue
            if path.startswith(root):
                _watch["seen"].append((event, path))


@pytest.fixture
def watch_folder():
    """``watch_folder(path)`` records every file event of this (the driver's) process under path."""
    if not getattr(sys, "_deskbench_audit", False):
        sys.addaudithook(_audit)  # audit hooks cannot be removed: it is idle when no root is set
        sys._deskbench_audit = True

    def watch(path):
        _watch.update(root=os.path.abspath(path), seen=[])
        return _watch["seen"]
    yield watch
    _watch["root"] = None


@multinode
def test_nodes_without_a_shared_disk_send_their_shard_stores_back(nodes, server, clean, six_tasks, tmp_path,
                                                                   watch_folder):
    """Each worker node keeps its shard stores in its own folder (``$DESKBENCH_TEST_NODE_DISK``,
    set on that node only), which the driver never reads: the stores come back as bytes, the
    merged store has everything. Then a second run with the same worker folder: the first run's
    shard stores there are set aside and the second run's shards are seeded afresh."""
    worker_dir = f"${DISK_VAR}/shards"
    touched = watch_folder(nodes.disks)
    seen = []
    cfg = config(tmp_path / "driver.sqlite", server.base_url)
    result = run_on_ray(cfg, "selfscore", 3, dataset=load_dataset(str(six_tasks)), worker_dir=worker_dir,
                        poll_s=0.1, on_progress=lambda p: seen.append({k: dict(v) for k, v in p.shards.items()}))
    watch_folder(tmp_path / "nothing")  # stop watching before this test reads the nodes' folders
    assert touched == [], touched[:5]
    assert result.errors == [] and result.progress.done == len(QUESTIONS)
    assert_exactly_once_and_equal_to_clean(cfg.store, result.run_id, clean[:2], len(QUESTIONS))
    board = last_board(seen)
    assert len({board[s]["node_id"] for s in range(3)} - {nodes.head}) >= 2
    first_files = {(board[spec.index]["node_id"], spec.name) for spec in result.shards}
    for spec in result.shards:  # the driver's copy of each shard store is the node's file, byte for byte
        on_node = nodes.disk(board[spec.index]["node_id"]) / "shards" / spec.name
        assert on_node.read_bytes() == open(spec.path, "rb").read()
        assert StoreReader(on_node).run(result.run_id)["id"] == result.run_id

    # the same worker folder for another run: shard-<k>.sqlite there belongs to the first run
    seen.clear()
    cfg2 = config(tmp_path / "second.sqlite", server.base_url)
    again = run_on_ray(cfg2, "selfscore", 3, dataset=load_dataset(str(six_tasks)), worker_dir=worker_dir,
                       poll_s=0.1, on_progress=lambda p: seen.append({k: dict(v) for k, v in p.shards.items()}))
    assert again.run_id != result.run_id
    assert again.errors == [] and again.progress.done == len(QUESTIONS)
    assert_exactly_once_and_equal_to_clean(cfg2.store, again.run_id, clean[:2], len(QUESTIONS))
    board = last_board(seen)
    reused = {(board[spec.index]["node_id"], spec.name) for spec in again.shards} & first_files
    assert reused, "no shard of the second run ran where the first run left a store of its name"
    for spec in again.shards:
        folder = nodes.disk(board[spec.index]["node_id"]) / "shards"
        assert StoreReader(folder / spec.name).run(again.run_id)["id"] == again.run_id
    for node_id, name in reused:  # the first run's store there was set aside, not resumed
        stale = list((nodes.disk(node_id) / "shards").glob(f"{name}.*.stale"))
        assert len(stale) == 1 and StoreReader(stale[0]).runs()[0]["id"] == result.run_id


def test_a_worker_file_of_this_planning_is_resumed_one_of_another_is_set_aside(tmp_path, six_tasks):
    """What a shard task does with the file at its worker path (no Ray needed): seeds it when
    missing, keeps it for a retry of the same planning, and sets aside (with its write-ahead
    log) a file of another planning, as ``ray run --resume`` or a second run makes."""
    cfg = config(tmp_path / "driver.sqlite", "http://127.0.0.1:9/v1")
    run_id = create_run(cfg, "selfscore", load_dataset(str(six_tasks)))
    first = plan_shards(cfg.store, run_id, 2, tmp_path / "plan-a", "selfscore")
    later = plan_shards(cfg.store, run_id, 3, tmp_path / "plan-b", "selfscore")
    assert first[0].plan and later[0].plan != first[0].plan and plan_of(first[0].path) == first[0].plan
    work = tmp_path / "worker" / "shard-0.sqlite"
    assert prepare_shard_file(first[0], work, open(first[0].path, "rb").read()) is False  # seeded
    assert prepare_shard_file(first[0], work, b"not used") is True  # a retry: resumed
    wal = work.with_name(work.name + "-wal")
    wal.write_bytes(b"the old store's log")
    assert prepare_shard_file(later[0], work, open(later[0].path, "rb").read()) is False
    assert not wal.exists()  # the old log went with its store (before anything opened the new one)
    assert plan_of(work) == later[0].plan
    assert {i["id"] for i in StoreReader(work).interactions(run_id)} == set(later[0].interaction_ids)
    stale = list(work.parent.glob("shard-0.sqlite.*.stale"))
    assert len(stale) == 1 and plan_of(stale[0]) == first[0].plan
    assert stale[0].with_name(stale[0].name + "-wal").read_bytes() == b"the old store's log"
    work.with_name(work.name + "-wal").unlink(missing_ok=True)
    work.write_bytes(b"not a store")
    assert prepare_shard_file(later[0], work, open(later[0].path, "rb").read()) is False
    assert plan_of(work) == later[0].plan and len(list(work.parent.glob("shard-0.sqlite.*.stale"))) == 2
