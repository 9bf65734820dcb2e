"""`gridgate workflow`: submit, list, show and cancel workflows, and draw their DAG."""
