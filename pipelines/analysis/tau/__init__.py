"""tau_k: the points to fit, the fits of one curve and of a campaign, their verdicts, the store of
fits."""
