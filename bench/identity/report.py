"""The identity report as text for a terminal; the JSON form is `IdentityReport.to_dict()`."""

from __future__ import annotations

from bench.identity.run import IdentityReport


def _cut(text: str, width: int = 70) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def render(report: IdentityReport) -> str:
    lines = [f"identity: {report.texts} texts, {report.queries} queries from {report.source}",
             f"token lengths: {report.token_lengths}"]
    if report.embed_pairs:
        lines += ["", "embeddings",
                  f"  {'pair':<28} {'dtype':<8} {'cos min':>9} {'cos p01':>9} {'cos mean':>9} {'max|Δ|':>9} "
                  f"{'norm Δ':>9} {'top10':>6}  verdict"]
        for p in report.embed_pairs:
            lines.append(f"  {p.a + ' ~ ' + p.b:<28} {p.thresholds.dtype:<8} {p.cosine_min:9.6f} {p.cosine_p01:9.6f} "
                         f"{p.cosine_mean:9.6f} {p.max_abs_diff:9.2e} {p.max_norm_diff:9.2e} {_num(p.top10_overlap, '6.3f'):>6}  "
                         f"{p.verdict.upper()}")
            lines.append("    by tokens: " + " | ".join(
                f"{b['tokens']}: {b['texts']} texts, mean {b['cosine_mean']:.5f}, min {b['cosine_min']:.5f}, {b['failing']} failing"
                for b in p.buckets))
            for reason in p.insufficient:
                lines.append(f"    insufficient data: {reason}")
            if not p.failures:
                continue
            for failure in p.failures:
                lines.append(f"    failed: {failure}")
            for cause in p.causes:
                lines.append(f"    cause [{cause.code}]: {cause.detail}")
                lines.append(f"      fix: {cause.fix}")
            for w in p.worst[:3]:
                lines.append(f"    worst #{w['index']} ({w['tokens']} tokens) cosine {w['cosine']:.5f}: {_cut(str(w['text']))!r}")
        lines.append("  batch invariance (a text alone vs inside a batch):")
        for name, b in report.batch_invariance.items():
            lines.append(f"    {name}: min cosine {b['min_cosine']:.6f} over {b['texts']} texts  {str(b['verdict']).upper()}")
    if report.rerank_pairs or report.rerankers:
        lines += ["", "rerank"]
        for name, r in report.rerankers.items():
            honoured = "honoured" if r["top_n_honoured"] else f"IGNORED ({r['top_n_returned']} results)"
            lines.append(f"  {name}: top_n={r['top_n_requested']} {honoured}")
        for p in report.rerank_pairs:
            lines.append(f"  {p.a + ' ~ ' + p.b:<28} max|Δscore| {p.max_score_diff:.2e}  mean {p.mean_score_diff:.2e}  "
                         f"Kendall tau mean {_num(p.kendall_tau_mean, '.4f')} min {_num(p.kendall_tau_min, '.4f')}  {p.verdict.upper()}")
            for reason in p.insufficient:
                lines.append(f"    insufficient data: {reason}")
            for failure in p.failures:
                lines.append(f"    failed: {failure}")
            for cause in p.causes:
                lines.append(f"    cause [{cause.code}]: {cause.detail}")
                lines.append(f"      fix: {cause.fix}")
    t = report.timings
    spent = ", ".join(f"{k} {v:.2f} s" for k, v in t.get("endpoint_s", {}).items())
    lines += ["", f"time: total {t.get('total_s', 0):.2f} s; endpoints: {spent}; diagnosis probes {t.get('diagnosis_s', 0):.2f} s; "
                  f"ragbench's own work {t.get('suite_s', 0):.3f} s",
              f"verdict: {report.verdict.upper()}"]
    return "\n".join(lines)
