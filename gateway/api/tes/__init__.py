"""GA4GH Task Execution Service 1.1 over gridgate's jobs: a TES task is a gridgate job."""
