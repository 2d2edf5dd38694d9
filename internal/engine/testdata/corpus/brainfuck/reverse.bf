Reverses its standard input: reads every byte onto the tape (each in the
next cell) until the end of input (beef stores 0 there) then walks back
printing them

>,[>,]   read bytes until the end of input
<[.<]    print them backwards
