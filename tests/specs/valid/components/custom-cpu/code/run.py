print("custom-cpu fixture")
