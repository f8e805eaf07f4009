"""Pipeline stages: each module has ``run(cfg, ...) -> small manifest``."""
