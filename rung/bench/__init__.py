"""`rung bench`: run the workload for real under each strategy, on local processes or
test hosts with shaped links, beside the model's prediction for the same configuration."""
