"""The benchmark harness behind `flashssm bench`: workloads, implementations, floors, reports."""
