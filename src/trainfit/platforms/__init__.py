"""Platform rules (PAI-DLC, Lingjun, TI-ONE, generic clusters) as data, with a pure evaluator."""

from trainfit.platforms.rules import (JobContext, Rule, Violation, evaluate, evaluate_command, evaluate_instance,
                                      get_rule, load_rules, rules_for_claim)

__all__ = ["JobContext", "Rule", "Violation", "evaluate", "evaluate_command", "evaluate_instance", "get_rule",
           "load_rules", "rules_for_claim"]
