"""Change points over the nightly history: the search, its thresholds and how sure a date is."""
