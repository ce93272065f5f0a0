"""From a decision to a running job: TF_CONFIG (pure), the generated entry point and
manifests (pure), and the engines that run them (local processes, Ray). Only the
engine modules import TensorFlow or Ray, and only when a job runs."""
