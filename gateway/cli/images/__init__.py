"""`gridgate image`: build, inspect, verify and extract SIF images on this machine."""
