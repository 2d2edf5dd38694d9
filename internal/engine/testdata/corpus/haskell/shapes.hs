module Main where

import Data.List (sortOn)
import Text.Printf (printf)

data Shape
  = Circle Double
  | Rect Double Double
  deriving (Show, Eq)

class HasArea a where
  area :: a -> Double

instance HasArea Shape where
  area (Circle r) = pi * r * r
  area (Rect w h) = w * h

main :: IO ()
main = do
  let shapes = [Rect 3 4, Circle 1, Rect 1 1]
  mapM_ (\s -> printf "%-16s %6.2f\n" (show s) (area s)) (sortOn area shapes)
  print . sum $ map area shapes
  print [x * x | x <- [1 .. 10 :: Int], even x]
