"""What reads the user's world: plans, GPU catalogs, target models, price offers, training
logs, run configs and datasets, each checked as it is read. Imports only basics."""
