"""A suite's runs read as series: one per gated figure and configuration, its change points, the newest run's place."""
