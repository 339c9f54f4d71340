"""Chaos suite: a seeded, randomized fault schedule against trainers, workers, envs, disks and tournaments."""
