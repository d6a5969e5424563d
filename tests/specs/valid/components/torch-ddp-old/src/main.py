print("torch-ddp 1.0.0 fixture")
