"""Sizing TEI hardware: saturation under a p99 SLO and its recommendations, the in-process ceiling, GPU telemetry.

Plain functions over `load_point` records; `ragbench size` feeds them points it measures (session), the report
reads them back from the results file. The steps:

1. `closed`: per batch size, concurrency 1, 2, 4, … until texts/s stops rising; the batch is the one that serves
   the most texts/s *at the SLO*, its concurrency the point with the best texts/s under the SLO.
2. `search`: open-loop probes at that batch, each its own short measured point with its own warm-up: the rate
   grows ×2 from a start until a probe fails, then bisects between the last pass and the first failure.
3. `recommend`: TEI (`tei`) and Open WebUI settings, replicas and cost (`economics`), each line naming its points.
"""
