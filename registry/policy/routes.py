"""Routes: how a call speaking one version of a tool reaches the current one.

A route is a chain of steps from a version to a target version. A step from
`a` to `b` is either an identity step (`ops == []`: the change from `a` to `b`
is not breaking, so `a`'s arguments are valid under `b` and read the same) or
a registered converter from `a` to `b` (verified when it was registered).
An identity step is also one whose breaking changes were all accepted on
purpose: `b` carries them in its stored `acceptances` (kind and path; see
`registry.policy.acceptance`). Such a step is marked `accepted`: `a`'s
arguments go on unconverted, and whatever of them `b` refuses is refused.
Retired versions may sit inside a route: converting arguments through them is
still sound, and a converter that starts from a retired version is how an
alias contract keeps working after its version was retired.

The search is a breadth-first search: the shortest route wins; among equally
short ones, converters (explicit, reviewed choices) come before identity
steps, and newer versions before older ones, so the answer is deterministic.

    finder = RouteFinder()
    finder.route(versions, converters, start=3, target=5)
    # [RouteStep(from_=3, to=4, ops=[...]), RouteStep(from_=4, to=5, ops=[])]
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from registry.compat import ChangeReport, Severity, classify
from registry.policy.acceptance import covers

__all__ = ["ConverterLike", "RouteFinder", "RouteStep", "VersionLike"]


class VersionLike(Protocol):
    """A stored version as the policy reads it (store records and toolset entries fit)."""

    @property
    def version(self) -> int: ...
    @property
    def digest(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def definition(self) -> dict[str, Any]: ...


class ConverterLike(Protocol):
    @property
    def from_version(self) -> int: ...
    @property
    def to_version(self) -> int: ...
    @property
    def ops(self) -> list[dict[str, Any]]: ...


class RouteStep(msgspec.Struct, frozen=True):
    """One step of a route, in the wire shape of the toolset payload. `accepted`: an
    identity step only because its breaking changes were accepted on purpose."""

    from_: int = msgspec.field(name="from")
    to: int
    ops: list[dict[str, Any]] = msgspec.field(default_factory=list)
    accepted: bool = False


class RouteFinder:
    """Finds routes; keeps a bounded cache of classifications by digest pair.

    Definitions are immutable and a digest names one, so a classification
    keyed by `(old digest, new digest)` never goes stale. One finder lives as
    long as the service (the toolset builder and the publish rule share it).
    """

    def __init__(
        self,
        cache_size: int = 4096,
        classify: Callable[[Mapping[str, Any], Mapping[str, Any]], ChangeReport] = classify,
    ) -> None:
        self._cache: OrderedDict[tuple[str, str], ChangeReport] = OrderedDict()
        self._cache_size = cache_size
        # what classifies an uncached pair (the service's toolset builder: a worker process)
        self._classify = classify

    def report(self, old: VersionLike, new: VersionLike) -> ChangeReport:
        """`classify(old.definition, new.definition)`, cached by digests."""
        key = (old.digest, new.digest)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        report = self._classify(old.definition, new.definition)
        self._cache[key] = report
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return report

    def is_identity_step(self, old: VersionLike, new: VersionLike) -> bool:
        """Nothing breaking from `old` to `new`, or every breaking change accepted by `new`
        (a version may carry `acceptances`: what it was published with on purpose)."""
        report = self.report(old, new)
        if report.severity is not Severity.BREAKING:
            return True
        accepted = getattr(new, "acceptances", None) or ()
        return bool(accepted) and covers(accepted, report)

    def _accepted_step(self, old: VersionLike, new: VersionLike) -> bool:
        # only asked of identity steps; versions without acceptances are never classified here
        if not getattr(new, "acceptances", None):
            return False
        return self.report(old, new).severity is Severity.BREAKING

    def route(
        self,
        versions: Sequence[VersionLike],
        converters: Sequence[ConverterLike],
        *,
        start: int,
        target: int,
    ) -> list[RouteStep] | None:
        """The route from version `start` to version `target`; None when there is none.

        Identity steps only go forward (to a newer version); converters go
        wherever they were registered.
        """
        if start == target:
            return []
        by_number: Mapping[int, VersionLike] = {v.version: v for v in versions}
        if start not in by_number or target not in by_number:
            return None
        outgoing: dict[int, list[ConverterLike]] = {}
        for converter in converters:
            outgoing.setdefault(converter.from_version, []).append(converter)
        previous: dict[int, RouteStep] = {}
        queue = deque([start])
        seen = {start}
        while queue:
            here = queue.popleft()
            for step in self._steps(here, by_number, outgoing, target):
                if step.to in seen:
                    continue
                seen.add(step.to)
                previous[step.to] = step
                if step.to == target:
                    return _unwind(previous, start, target)
                queue.append(step.to)
        return None

    def _steps(
        self,
        here: int,
        by_number: Mapping[int, VersionLike],
        outgoing: Mapping[int, list[ConverterLike]],
        target: int,
    ) -> Iterator[RouteStep]:
        # A generator: the search stops at the first step reaching the target,
        # so identity steps further down are never classified.
        for converter in sorted(outgoing.get(here, []), key=lambda c: -c.to_version):
            if converter.to_version in by_number:
                yield RouteStep(from_=here, to=converter.to_version, ops=list(converter.ops))
        for number in sorted((n for n in by_number if here < n <= target), reverse=True):
            old, new = by_number[here], by_number[number]
            if self.is_identity_step(old, new):
                yield RouteStep(from_=here, to=number, accepted=self._accepted_step(old, new))


def _unwind(previous: Mapping[int, RouteStep], start: int, target: int) -> list[RouteStep]:
    steps: list[RouteStep] = []
    here = target
    while here != start:
        step = previous[here]
        steps.append(step)
        here = step.from_
    steps.reverse()
    return steps
