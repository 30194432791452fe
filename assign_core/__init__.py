"""Kafka's partition assignors in pure Python, identical to the Java implementation, with the
skew and churn metrics of an assignment. No Spark import anywhere in this package.
"""

from assign_core.model import Assignment, AssignmentResult, GroupSpec, Member, TopicPartition

__all__ = ["Assignment", "AssignmentResult", "GroupSpec", "Member", "TopicPartition"]
