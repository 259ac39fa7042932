"""What one stored run reports: its metrics (the marts) and the views `runs` / `show` print."""
