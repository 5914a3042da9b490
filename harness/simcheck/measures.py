"""The measures between simulated and real replies at the same points (docs/simcheck.md).

Each measure is computed on :class:`Pair` items (one point: the real reply, the simulated one,
their acts) and every interval is the project's clustered percentile bootstrap
(``harness.study.cluster_bootstrap``) with the thread (``task_id``) as the cluster: the points
of one thread share an asker, a problem and helpers, so they are not independent.

- **Acts**: the confusion table (rows: the real asker's act, columns: the simulated user's),
  the share of points where both acts are the same, and Cohen's kappa over :data:`ACTS`.
- **Over-cooperation**: of the points where the real asker reported failure or asked again
  (act ``broken`` or ``asks``), the share where the simulated user reported success (``fixed``);
  **the reverse**: of the points where the real asker reported success, the share where the
  simulated user did not. Beside them, each side's share of ``fixed`` replies.
- **Facts** (details: :func:`details`; a fact is *told* by a reply that names a detail of it
  the conversation had not named, or, for a fact without details, most of its words):
  *requested given*: at points whose helper message asks (``acts.helper_asks``), the share of
  replies that tell a fact of the task or name a new detail; *unasked*: at the other points,
  the share that tell a fact of the task (a leak when the real asker did not); *early*: the
  share that tell a fact the real asker said only later in the thread; *invented*: the share
  naming a detail that neither the thread (question, messages, every fact, the solution) gives;
  *real facts matched*: of the facts the real reply gave (traced to this followup), the share
  the simulated reply tells too.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from harness.aids import sentences, strip_address, terms
from harness.simcheck.acts import ACTS, helper_asks
from harness.simcheck.points import Point, fact_origins
from harness.study import cluster_bootstrap, cohen_kappa

FAILED_OR_ASKED = ("broken", "asks")


@dataclass(frozen=True)
class Pair:
    """One point with both replies: ``sim`` None when the simulated user left."""

    point: Point
    sim: str | None
    real_act: str
    sim_act: str


def kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of (a, b) act pairs over every act of :data:`ACTS`."""
    return cohen_kappa(list(pairs), levels=list(ACTS)) if pairs else None


def _interval(pairs: Sequence[Pair], statistic: Callable[[list[Pair]], float | None]) -> dict[str, Any]:
    """The statistic on ``pairs`` and its clustered 95% interval (threads as clusters)."""
    groups: dict[str, list[Pair]] = {}
    for p in pairs:
        groups.setdefault(p.point.task_id, []).append(p)
    value = statistic(list(pairs))
    ci = cluster_bootstrap(list(groups.values()), statistic)
    return {"value": value, "low": ci.low, "high": ci.high, "threads": ci.clusters, "undefined": ci.undefined}


def _share(select: Callable[[Pair], bool], hit: Callable[[Pair], bool]) -> Callable[[list[Pair]], float | None]:
    def statistic(items: list[Pair]) -> float | None:
        chosen = [p for p in items if select(p)]
        return sum(hit(p) for p in chosen) / len(chosen) if chosen else None
    return statistic


def act_measures(pairs: Sequence[Pair]) -> dict[str, Any]:
    """The confusion table (``confusion[real][sim]``), the agreement share and kappa, with
    clustered intervals."""
    confusion = {a: {b: 0 for b in ACTS} for a in ACTS}
    for p in pairs:
        confusion[p.real_act][p.sim_act] += 1
    return {"confusion": confusion,
            "agreement": _interval(pairs, _share(lambda p: True, lambda p: p.real_act == p.sim_act)),
            "kappa": _interval(pairs, lambda items: kappa([(p.real_act, p.sim_act) for p in items]))}


def over_cooperation(pairs: Sequence[Pair]) -> dict[str, Any]:
    """Over-cooperation both ways and each side's share of success reports (see the module's text)."""
    over = _share(lambda p: p.real_act in FAILED_OR_ASKED, lambda p: p.sim_act == "fixed")
    under = _share(lambda p: p.real_act == "fixed", lambda p: p.sim_act != "fixed")
    return {"over": {**_interval(pairs, over), "n": sum(p.real_act in FAILED_OR_ASKED for p in pairs)},
            "reverse": {**_interval(pairs, under), "n": sum(p.real_act == "fixed" for p in pairs)},
            "sim_fixed": _interval(pairs, _share(lambda p: True, lambda p: p.sim_act == "fixed")),
            "real_fixed": _interval(pairs, _share(lambda p: True, lambda p: p.real_act == "fixed"))}


# --- facts ---------------------------------------------------------------------------------------
_STOP = frozenset("""the and for that this with have has was were are but not you your what when then than
    from there here they them its it's into just like also some any can could would should will about after
    before again still now only very more most been being did does doing done get got getting use used
    using try tried trying work works worked working know think thought want need say says said""".split())
_URL = re.compile(r"https?://\S+")


def _unaddressed(text: str) -> str:
    """The text without the IRC addresses that open its lines (a helper's nick is no detail)."""
    return "\n".join(strip_address(line) for line in (text or "").splitlines())


def details(text: str) -> set[str]:
    """The details a text names, lowercased: a term with a digit, a slash, a dot, a dash or an
    underscore inside (versions, paths, packages, devices, commands' options), an acronym, a
    capitalised word that does not open its sentence, or a URL; addresses at line starts are
    left out."""
    text = _unaddressed(text)
    out = {u.rstrip(".,)").lower() for u in _URL.findall(text)}
    for sentence in sentences(_URL.sub(" ", text)):
        for k, t in enumerate(terms(sentence)):
            t = t.strip(".,:;")
            if len(t) < 2:
                continue
            if (any(c.isdigit() for c in t) or any(c in t[1:-1] for c in "/._-") or (t.isupper() and len(t) >= 2)
                    or (k > 0 and t[0].isupper() and t.lower() not in ("i", "i'm", "i've", "i'll"))):
                out.add(t.lower())
    return out


def words_of(text: str) -> set[str]:
    """Every term of a text, lowercased: a detail counts as said when its word was written in any case."""
    out = {t.lower().strip(".,:;") for t in terms(text or "")}
    return out | {u.rstrip(".,)").lower() for u in _URL.findall(text or "")}


def _words(text: str) -> set[str]:
    return {t.lower().strip(".,:;") for t in terms(text or "") if len(t) >= 3} - _STOP


def tells(reply: str, fact: str, known: str) -> bool:
    """The reply tells the fact: it uses a detail of the fact that the conversation (``known``)
    had not used, or, when the fact has no such detail, at least half of the fact's content
    words the conversation had not used (two at least)."""
    own = details(fact) - words_of(known)
    if own:
        return bool(own & words_of(_unaddressed(reply)))
    words = _words(fact) - _words(known)
    return len(words) >= 2 and len(words & _words(reply)) >= math.ceil(len(words) / 2)


def reply_facts(reply: str | None, point: Point, followups_of: dict[str, list[str]]) -> dict[str, Any]:
    """What one reply at ``point`` tells: the hidden facts (not yet in the history) it tells,
    those the real asker said only later, its new details, and its invented ones."""
    if not reply:
        return {"told": [], "early": [], "new": [], "invented": []}
    known = point.known_text()
    origins = fact_origins(point.all_facts, followups_of.get(point.task_id, []))
    hidden = [(f, o) for f, o in zip(point.all_facts, origins) if o is None or o >= point.index]
    told = [(f, o) for f, o in hidden if tells(reply, f, known)]
    new = details(reply) - words_of(known)
    grounded = words_of("\n".join([*point.all_facts, point.solution or "", point.problem or ""]))
    return {"told": [f for f, _ in told], "early": [f for f, o in told if o is not None and o > point.index],
            "new": sorted(new), "invented": sorted(new - grounded)}


def fact_measures(pairs: Sequence[Pair], followups_of: dict[str, list[str]]) -> dict[str, Any]:
    """The fact measures of both sides (see the module's text), each with its clustered interval."""
    read = {(p.point.id, side): reply_facts(p.sim if side == "sim" else p.point.real, p.point, followups_of)
            for p in pairs for side in ("sim", "real")}

    def measure(side: str, select, hit):
        return _interval(pairs, _share(select, lambda p: hit(read[(p.point.id, side)], p)))

    asked = lambda p: helper_asks(p.point.helper)  # noqa: E731
    out: dict[str, Any] = {"asked_points": sum(asked(p) for p in pairs)}
    for side in ("sim", "real"):
        out[side] = {
            "requested_given": measure(side, asked, lambda r, p: bool(r["told"] or r["new"])),
            "unasked_told": measure(side, lambda p: not asked(p), lambda r, p: bool(r["told"])),
            "early": measure(side, lambda p: True, lambda r, p: bool(r["early"])),
            "invented": measure(side, lambda p: True, lambda r, p: bool(r["invented"])),
        }
    real_told = {p.point.id: set(read[(p.point.id, "real")]["told"]) for p in pairs}
    out["real_facts_matched"] = _interval(pairs, lambda items: _matched(items, real_told, read))
    out["examples_invented"] = [{"id": p.point.id, "details": read[(p.point.id, "sim")]["invented"][:5]}
                                for p in pairs if read[(p.point.id, "sim")]["invented"]][:5]
    return out


def _matched(items: list[Pair], real_told: dict[str, set[str]], read: dict) -> float | None:
    """Of the hidden facts the real replies told, the share the simulated replies told too."""
    total = sum(len(real_told[p.point.id]) for p in items)
    hit = sum(len(real_told[p.point.id] & set(read[(p.point.id, "sim")]["told"])) for p in items)
    return hit / total if total else None


def length_ratio(pairs: Sequence[Pair]) -> dict[str, Any]:
    """Mean words of the simulated replies over mean words of the real ones, with its
    interval, and each side's mean and median words (a reply that left counts 0 words)."""
    def words(text: str | None) -> int:
        return len((text or "").split())

    def ratio(items: list[Pair]) -> float | None:
        real = sum(words(p.point.real) for p in items)
        return sum(words(p.sim) for p in items) / real if real else None
    sims = sorted(words(p.sim) for p in pairs)
    reals = sorted(words(p.point.real) for p in pairs)
    return {**_interval(pairs, ratio), "sim_mean": sum(sims) / len(sims) if sims else None,
            "real_mean": sum(reals) / len(reals) if reals else None,
            "sim_median": sims[len(sims) // 2] if sims else None,
            "real_median": reals[len(reals) // 2] if reals else None}
