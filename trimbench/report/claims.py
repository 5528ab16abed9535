"""The reproduced works' qualitative claims, checked over a score table: ours beside the published numbers.

Each :class:`Claim` is written as its work states it (reference/claims.yaml, the rule's input), cites
where, says how it is read on the score table, and is a function over one side's cells (a
:class:`~trimbench.face.View`: ours, or the work's own published numbers) returning the cells it
covers, each holding or not. A claim holds when every covered cell holds, fails when none does, is
partly true otherwise, and is "not covered" when the side has none of its cells (a run without the
methods it compares is no evidence against it).

This is the mechanism the tracks share; each track's views and checks are its face's
(``claim_views``, ``claim_checks``: trimbench.tracks).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from trimbench.config.schema import read_yaml
from trimbench.face import View
from trimbench.report.scoreboard import standalone_page
from trimbench.tracks import TRACKS

HOLDS, FAILS, PARTLY, NOT_COVERED = "holds", "fails", "partly", "not covered"
CELL_COLUMNS = ["cell", "evidence", "holds"]


@dataclass(frozen=True)
class Verdict:
    cells: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CELL_COLUMNS))

    @property
    def covered(self) -> int:
        return len(self.cells)

    @property
    def held(self) -> int:
        return int(self.cells["holds"].sum()) if self.covered else 0

    @property
    def share(self) -> float | None:
        return self.held / self.covered if self.covered else None

    @property
    def outcome(self) -> str:
        if not self.covered:
            return NOT_COVERED
        return HOLDS if self.held == self.covered else FAILS if self.held == 0 else PARTLY


@dataclass(frozen=True)
class Claim:
    id: str
    work: str
    tracks: tuple[str, ...]
    #: the claim as its work states it (quoted where the words are the work's)
    statement: str
    #: where it is stated: repository, file and line, or paper and section
    citation: str
    #: how the claim is read on the score table: the cells it covers and when one holds
    reading: str
    check: Callable[[View], list[dict]]

    def evaluate(self, view: View | None) -> Verdict:
        if view is None:
            return Verdict()
        rows = self.check(view)
        return Verdict(pd.DataFrame(rows, columns=CELL_COLUMNS).astype({"holds": bool}))


# --- the claims ----------------------------------------------------------------------------------------------------

#: each claim's check, from the tracks' faces (one check per claim id, whichever tracks list it)
def _checks() -> dict:
    """Claim id -> its check, from every track's face; one id checked by two tracks is an error."""
    checks = {}
    for track in TRACKS.values():
        for claim, check in track.claim_checks.items():
            if claim in checks and checks[claim] is not check:
                raise ValueError(f"claim '{claim}' has two checks ({track.name}'s and another track's)")
            checks[claim] = check
    return checks


CHECKS = _checks()
CLAIM_KEYS = ("id", "tracks", "work", "statement", "citation", "reading")


def load_claims(path: str | Path) -> tuple[Claim, ...]:
    """The claims of ``path`` (reference/claims.yaml, the claims rule's input), each with its check; a
    claim without a check, a check without a claim, a claim of a track whose face does not check it
    or a missing field is an error naming it."""
    entries = read_yaml(Path(path).read_text(encoding="utf-8"), str(path))["claims"]
    for entry in entries:
        missing = [key for key in CLAIM_KEYS if not entry.get(key)]
        if missing:
            raise ValueError(f"{path}: claim {entry.get('id', '?')!r} lacks {', '.join(missing)}")
    ids = [entry["id"] for entry in entries]
    if sorted(ids) != sorted(CHECKS):
        raise ValueError(f"{path}: claims without a check: {sorted(set(ids) - set(CHECKS))}; "
                         f"checks without a claim: {sorted(set(CHECKS) - set(ids))}")
    for entry in entries:
        unchecked = [track for track in entry["tracks"]
                     if track not in TRACKS or entry["id"] not in TRACKS[track].claim_checks]
        if unchecked:
            raise ValueError(f"{path}: claim {entry['id']!r} names tracks {unchecked}, whose faces "
                             "(trimbench.tracks) do not check it")
    return tuple(Claim(entry["id"], entry["work"], tuple(entry["tracks"]), entry["statement"], entry["citation"],
                       entry["reading"], CHECKS[entry["id"]]) for entry in entries)


def track_claims(track: str, claims: tuple[Claim, ...]) -> tuple[Claim, ...]:
    return tuple(claim for claim in claims if track in claim.tracks)


# --- one experiment: views of both sides, the table and its renderings --------------------------------------------

def experiment_views(subject: str, configs: dict[str, dict], scores: dict[str, pd.DataFrame],
                     published: pd.DataFrame, main_metrics: dict[str, str],
                     model_ids: dict[str, str]) -> tuple[View, View]:
    """Ours and the published side of ``subject``, as its track's face reads them; ``configs`` and
    ``scores`` hold every experiment of its track (the ablation claims compare experiments)."""
    return TRACKS[configs[subject]["track"]].claim_views(subject, configs, scores, published, main_metrics,
                                                         model_ids)


def claims_table(subject: str, track: str, ours: View, published: View,
                 claims: tuple[Claim, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary (one row per claim of the track) and cells (one row per claim, side and cell)."""
    rows, cells = [], []
    for claim in track_claims(track, claims):
        row = {"experiment": subject, "claim": claim.id, "work": claim.work, "statement": claim.statement,
               "citation": claim.citation, "reading": claim.reading}
        for side, view in (("ours", ours), ("published", published)):
            verdict = claim.evaluate(view)
            row.update({side: verdict.outcome, f"{side}_share": verdict.share, f"{side}_held": verdict.held,
                        f"{side}_covered": verdict.covered})
            cells.append(verdict.cells.assign(claim=claim.id, side=side))
        rows.append(row)
    cell_table = pd.concat(cells, ignore_index=True) if cells else pd.DataFrame(columns=CELL_COLUMNS)
    return pd.DataFrame(rows), cell_table.reindex(columns=["claim", "side", *CELL_COLUMNS])


def _outcome(row, side: str) -> str:
    outcome = row[side]
    return outcome if outcome == NOT_COVERED else f"{outcome} ({row[f'{side}_held']}/{row[f'{side}_covered']})"


def claims_markdown(subject: str, summary: pd.DataFrame, cells: pd.DataFrame) -> str:
    lines = [f"# Claims: {subject}", "",
             "Each claim of the reproduced work, checked on our scores and on the published numbers: holds (every "
             "covered cell), partly, fails (no cell), or not covered (none of its cells in that table).", ""]
    if summary.empty:
        return "\n".join([*lines, "No claim of this track is checked.", ""])
    readable = pd.DataFrame({"claim": summary["claim"], "ours": [_outcome(r, "ours") for _, r in summary.iterrows()],
                             "published": [_outcome(r, "published") for _, r in summary.iterrows()]})
    lines += [readable.to_markdown(index=False), ""]
    for _, row in summary.iterrows():
        lines += [f"## {row['claim']}", "", f"{row['work']}: {row['statement']}", "", f"Source: {row['citation']}.",
                  "", f"Checked as: {row['reading']}.", ""]
        for side in ("ours", "published"):
            mine = cells[(cells["claim"] == row["claim"]) & (cells["side"] == side)]
            lines.append(f"{side}: {_outcome(row, side)}")
            lines += [f"- {c.cell}: {c.evidence} ({'holds' if c.holds else 'does not hold'})"
                      for c in mine.itertuples()]
            lines.append("")
    return "\n".join(lines)


def claims_html(subject: str, summary: pd.DataFrame, cells: pd.DataFrame) -> str:
    parts = [f"<h2>Claims: {html.escape(subject)}</h2>"]
    if summary.empty:
        return standalone_page(parts[0] + "<p>No claim of this track is checked.</p>")
    head = "<tr><th>claim</th><th>as stated</th><th>source</th><th>checked as</th><th>ours</th><th>published</th></tr>"
    body = "".join(
        f"<tr><td>{html.escape(r['claim'])}</td><td>{html.escape(r['statement'])}</td>"
        f"<td>{html.escape(r['citation'])}</td><td>{html.escape(r['reading'])}</td>"
        f"<td>{html.escape(_outcome(r, 'ours'))}</td><td>{html.escape(_outcome(r, 'published'))}</td></tr>"
        for _, r in summary.iterrows())
    parts.append(f"<table class='claims'>{head}{body}</table>")
    shown = cells.assign(holds=cells["holds"].map({True: "yes", False: "no"}))
    for claim, mine in shown.groupby("claim", sort=False):
        parts.append(f"<h3>{html.escape(claim)}</h3>" + mine.drop(columns="claim").to_html(index=False, border=0))
    return standalone_page("\n".join(parts))


def claims_outputs(subject: str, configs: dict[str, dict], scores: dict[str, pd.DataFrame], published: pd.DataFrame,
                   main_metrics: dict[str, str], model_ids: dict[str, str],
                   claims: tuple[Claim, ...]) -> dict[str, str]:
    """The texts of the claims rule's outputs: markdown, csv (the summary), html."""
    ours, theirs = experiment_views(subject, configs, scores, published, main_metrics, model_ids)
    summary, cells = claims_table(subject, configs[subject]["track"], ours, theirs, claims)
    return {"markdown": claims_markdown(subject, summary, cells),
            "csv": summary.to_csv(index=False, float_format="%.6f"),
            "html": claims_html(subject, summary, cells)}
