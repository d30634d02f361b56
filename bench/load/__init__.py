"""The load engine: the schedule, worker processes (and Ray actors), the client, histograms, the server view."""
