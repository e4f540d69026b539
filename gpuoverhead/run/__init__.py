"""Running a suite: the plan, worker processes sampling rounds, the budget, the environment."""
