"""Two run sets compared metric by metric, where the time went, and schedules side by side."""
