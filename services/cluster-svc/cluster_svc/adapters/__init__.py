"""The only modules of cluster-svc that import boto3 or kubernetes."""
