import os

print(os.environ["PAI_USER_ARGS"])
